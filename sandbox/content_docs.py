"""Real documentation pages for judging main-text extraction: is any real content lost?

Each site is a Debian documentation package's HTML, written by its own generator (DocBook,
Sphinx, a hand-made one, Doxygen, javadoc, the Apache manual's XSLT, texi2html). Its
content area is named by a CSS selector checked by hand on several of its pages (the
navigation, sidebars and footers around it are what an extractor should drop). Inside the
content area every outer code block, table and definition list is something a reader of
documentation needs, so ``bench/content.py`` asks of each whether the extractor kept it.

The content area's whole text is a weaker truth than the articles': it is derived from the
selector, not read by hand, and keeps the page's title and headings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser, LexborNode

from .articles import block_text, declared_charset
from .content_metric import tokens
from .docsites import DocSite, ensure_installed


@dataclass(frozen=True)
class DocContent:
    """A documentation site and where its pages' content is.

    ``content`` selects the content area (one element a page); ``exclude`` what inside it
    is navigation (a page's own table of contents too) or no part of the text (Doxygen's line
    numbers and hidden tooltips in code); ``code`` the code blocks (``pre``, and Doxygen's
    ``div.fragment``);
    ``include`` and ``skip`` (regular expressions on the path under ``root``) which files
    are the site's pages of that generator."""

    name: str
    generator: str
    package: str
    root: str
    content: str
    exclude: tuple[str, ...] = ()
    code: str = "pre"
    include: str = r"\.html?$"
    skip: str = r"(?!)"
    sample: int = 40

    def site(self) -> DocSite:
        return DocSite(f"{self.name}.docs.test", self.package, self.root, "/")

    def files(self) -> list[Path]:
        root = Path(self.root)
        include, skip = re.compile(self.include), re.compile(self.skip)
        return sorted(p for p in root.rglob("*.htm*") if p.is_file()
                      and include.search(p.relative_to(root).as_posix())
                      and not skip.search(p.relative_to(root).as_posix()))


#: About 300 pages from eight generators, each site's two largest pages among them (Node.js's
#: all.html is 5.7 MB, libstdc++'s a01655.html 3.7 MB). Index pages (general indexes, tables
#: of contents, Doxygen's member indexes, javadoc's class-use and tree pages) are left aside:
#: navigation, not documentation to read.
SITES = (
    DocContent("postgresql", "DocBook XSL", "postgresql-doc-15", "/usr/share/doc/postgresql-doc-15/html",
               "body > div:not(.navheader):not(.navfooter)", exclude=("div.toc",), skip=r"^bookindex\.html$"),
    DocContent("python", "Sphinx", "python3.11-doc", "/usr/share/doc/python3.11/html", "div[role=main]",
               exclude=("a.headerlink",), skip=r"^(genindex.*|contents|py-modindex|search)\.html$"),
    DocContent("django", "Sphinx (Django's theme)", "python-django-doc", "/usr/share/doc/python-django-doc/html",
               "div#yui-main div.yui-g", exclude=("a.headerlink",),
               skip=r"^(index|genindex|py-modindex|search)\.html$"),
    DocContent("nodejs", "Node.js's own (Markdown to HTML)", "nodejs-doc", "/usr/share/doc/nodejs/api",
               "div#apicontent", sample=15),
    DocContent("libstdcxx", "Doxygen", "libstdc++-12-doc", "/usr/share/doc/gcc-12-base/libstdc++/user",
               "div.contents", exclude=("span.lineno", "div.ttc"), code="pre, div.fragment",
               skip=r"^(functions|globals|namespacemembers)\w*\.html$"),
    DocContent("javadoc", "javadoc", "openjdk-17-doc", "/usr/share/doc/openjdk-17-jre-headless/api", "main",
               skip=r"(^|/)(class-use/|package-tree\.html|index-files/|index-\d+\.html|allclasses|allpackages)"),
    DocContent("apache", "Apache httpd manual (XSLT)", "apache2-doc", "/usr/share/doc/apache2-doc/manual/en",
               "div#page-content", exclude=("div#quickview", "div.top")),
    DocContent("gettext", "texi2html", "gettext-doc", "/usr/share/doc/gettext", "body",
               exclude=('table[cellpadding="1"]', "body > p:last-of-type"), include=r"^gettext_\d+\.html$",
               sample=25),
)


def ensure_sites_installed(sites: tuple[DocContent, ...] = SITES) -> None:
    ensure_installed(tuple(s.site() for s in sites))


def sample(site: DocContent, n: int | None = None, largest: int = 2) -> list[Path]:
    """``n`` of the site's pages spread evenly over it (sorted by path), and its ``largest``."""
    files = site.files()
    n = site.sample if n is None else n
    step = max(1, len(files) / max(1, n))
    picked = {files[int(i * step)] for i in range(min(n, len(files)))}
    picked |= set(sorted(files, key=lambda p: p.stat().st_size)[-largest:] if largest else [])
    return sorted(picked)


@dataclass
class DocPage:
    """One page's content area: its text, and its code blocks, tables and definition lists."""

    id: str
    path: Path
    charset: str
    area_text: str
    elements: list[tuple[str, str]] = field(default_factory=list)  # (kind, text)


def _inside(node: LexborNode, ids: set[int] | frozenset[int], stop: LexborNode) -> bool:
    """Whether an ancestor of ``node`` below ``stop`` is one of ``ids``."""
    parent = node.parent
    while parent is not None and parent.mem_id != stop.mem_id:
        if parent.mem_id in ids:
            return True
        parent = parent.parent
    return False


def _verbatim(node: LexborNode, skip: frozenset[int]) -> str:
    """A code block's text as written, but for the elements in ``skip``."""
    parts, child = [], node.child
    while child is not None:
        if child.tag == "-text":
            parts.append(child.text_content or "")
        elif child.mem_id not in skip:
            parts.append(_verbatim(child, skip))
        child = child.next
    return "".join(parts)


def _element_text(node: LexborNode, skip: frozenset[int]) -> str:
    if node.tag == "pre":
        return _verbatim(node, skip)
    return "\n".join(block_text(node, skip))


def _kind(node: LexborNode, text: str, skip: frozenset[int]) -> str:
    """code, table or dl; a table that only wraps code blocks (texi2html's examples) is code."""
    if node.tag == "table":
        code = " ".join(_element_text(p, skip) for p in node.css("pre"))
        return "code" if code and tokens(code) == tokens(text) else "table"
    return "dl" if node.tag == "dl" else "code"


def measure(site: DocContent, path: Path) -> DocPage | None:
    """The page's content area and its outer code blocks, tables and definition lists (None
    when the content selector finds nothing: the page is left out and counted)."""
    body = path.read_bytes()
    charset = declared_charset(body)
    tree = LexborHTMLParser(body.decode(charset, errors="replace"))
    area = tree.css_first(site.content)
    if area is None:
        return None
    # Buttons are controls, not text (Node.js's newer pages put a "copy" button in every code block).
    skip = frozenset(n.mem_id for selector in (*site.exclude, "button") for n in area.css(selector))
    page = DocPage(f"{site.name}/{path.relative_to(site.root).as_posix()}", path, charset,
                   "\n\n".join(block_text(area, skip)))
    found = area.css(f"{site.code}, table, dl")
    ids = {n.mem_id for n in found}
    for node in found:
        if _inside(node, ids, area) or node.mem_id in skip or _inside(node, skip, area):
            continue
        text = _element_text(node, skip)
        if tokens(text):
            page.elements.append((_kind(node, text, skip), text))
    return page
