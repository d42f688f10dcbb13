"""One HTML page, parsed once: everything the crawler reads from its markup (pure logic).

The page is parsed by lexbor, an HTML5 parser in C, through selectolax. Links
with their anchor text, the title, ``<meta name=robots>``, ``<base href>`` and
the counts the render detector needs are all read from that one tree, by CSS
queries that run in C: no Python walk over the nodes. (Resiliparse's main-text
extractor also runs on lexbor, but on a tree of its own: resiliparse's Python
DOM costs about 12 ms a page to walk, selectolax's queries under 1 ms.)

Nothing here resolves or canonicalises URLs: hrefs come out as written, and
:mod:`crawlproj.content.extract` turns them into crawlable links.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

from selectolax.lexbor import LexborHTMLParser

from .budget import Nesting, PageBudget
from .language import declared_language
from .requisites import SELECTOR as REQUISITE_SELECTOR
from .requisites import Requisite, page_requisites
from .robots_directives import parse_directives

#: ``<link rel=...>`` kinds that name another page to crawl.
FOLLOW_LINK_RELS = frozenset({"next", "alternate"})
#: Elements whose text a browser does not show.
INVISIBLE = ("script", "style", "noscript", "template")
#: The most pieces of visible text an application shell shows (the render detector's test).
SHELL_TEXTS = 3


def clean(text: str) -> str:
    """Whitespace runs folded to one space, ends stripped."""
    return " ".join(text.split())  # (what re's \s+ and strip() give: the same test of a space, in one C call)


#: ``<script type>`` values that make a script: none, ``module`` and the HTML standard's
#: JavaScript MIME types. Any other type is a data block, which no browser runs.
SCRIPT_TYPES = frozenset({
    "", "module", "application/ecmascript", "application/javascript", "application/x-ecmascript",
    "application/x-javascript", "text/ecmascript", "text/javascript", "text/javascript1.0", "text/javascript1.1",
    "text/javascript1.2", "text/javascript1.3", "text/javascript1.4", "text/javascript1.5", "text/jscript",
    "text/livescript", "text/x-ecmascript", "text/x-javascript"})


@dataclass(frozen=True)
class Scripts:
    """A page's scripts: external (``src``), inline (with their characters), and how many are modules."""

    external: int
    inline: int
    inline_bytes: int
    module: int

    def __bool__(self) -> bool:
        return bool(self.external or self.inline)


@dataclass(frozen=True)
class ExtractedLink:
    """A link of a page: its URL (as written in :attr:`ParsedPage.links`, canonical once
    :func:`crawlproj.content.extract.iter_links` has resolved it) and its anchor text, cleaned."""

    url: str
    anchor: str
    nofollow: bool
    kind: str  # a | area | link


class ParsedPage:
    """The parsed page and what is read from it (each read at most once, on first use).

    With a :class:`~crawlproj.content.budget.PageBudget`, a page that nests deeper or holds
    more elements than it allows is parsed only up to where it passed the bound;
    :attr:`over_budget` then names the bound (``depth`` or ``elements``).

    :meth:`release` reads what every later stage reads and lets the tree go: a page's tree
    costs about ten times its HTML (43 MB for a link farm's 3.3 MB page), and a page can wait
    a while between its parse and its last reader. A read that needs the tree after that parses
    the page again."""

    def __init__(self, html: str, budget: PageBudget | None = None) -> None:
        self.over_budget: str | None = None
        self.max_links = budget.max_links if budget is not None else 0
        self.links_cut = False  # links past max_links were left
        self._pieces: dict[int, int] = {}  # text_pieces' answers by limit
        # (page URL, its links canonical or refused), when read where it was parsed (extract.resolve_links)
        self.resolved_links: tuple[str, list] | None = None
        # Read before the tree goes (REQUISITES_ENABLED): the stylesheets, scripts, images... it needs.
        self.want_requisites = bool(budget is not None and budget.requisites)
        # How the page nests, as measured (None without a budget): the content stage reads it
        # instead of measuring the page again (extract_content's ``nesting``).
        self.nesting: Nesting | None = None
        # What users keep of the page (PageContent), when extracted with the parse (page_parse).
        self.content = None
        if budget is not None:
            html, found = budget.bounded(html)
            self.over_budget = found.cut_reason
            self.nesting = found
        self.html = html
        self._tree: LexborHTMLParser | None = LexborHTMLParser(html)

    @property
    def tree(self) -> LexborHTMLParser:
        if self._tree is None:  # released: parsed again for a reader nothing foresaw
            self._tree = LexborHTMLParser(self.html)
        return self._tree

    def release(self) -> None:
        """Read what the spider reads (links, title, language, base, robots meta, text digest),
        then drop the tree. A caller that will read more (the render decision's counts) reads
        it first."""
        self.links, self.title, self.declared_language, self.base_href, self._robots_metas  # noqa: B018
        self.text_digest  # noqa: B018
        if self.want_requisites:
            self.requisites  # noqa: B018
        self._tree = None

    @classmethod
    def unparsed(cls, reason: str) -> ParsedPage:
        """A page given up on (``reason``: which budget it ran out of): no links, no title."""
        page = cls("")
        page.over_budget = reason
        return page

    @cached_property
    def title(self) -> str | None:
        """The first ``<title>``'s text, cleaned (None when there is none or it is empty)."""
        node = self.tree.css_first("title")
        text = clean(node.text(deep=True)) if node is not None else ""
        return text or None

    @cached_property
    def declared_language(self) -> str | None:
        """The language the markup declares: ``<html lang>`` (or ``xml:lang``), else
        ``<meta http-equiv=Content-Language>``; the primary subtag, lower case
        (:func:`~crawlproj.content.language.declared_language`)."""
        root = self.tree.css_first("html")
        html_lang = (root.attributes.get("lang") or root.attributes.get("xml:lang")) if root is not None else None
        meta_lang = next((m.attributes.get("content") for m in self.tree.css("meta[http-equiv]")
                          if (m.attributes.get("http-equiv") or "").strip().lower() == "content-language"), None)
        return declared_language(html_lang, meta_lang, None)

    @cached_property
    def base_href(self) -> str | None:
        """The first ``<base href>``, as written."""
        node = self.tree.css_first("base[href]")
        return node.attributes.get("href") if node is not None else None

    def robots_directives(self, agent: str = "crawlproj", now: float | None = None) -> set[str]:
        """Directives of ``<meta name=robots>`` and ``<meta name=AGENT>``, lower case, read as
        :func:`~crawlproj.content.robots_directives.parse_directives` reads them (``none``
        adds ``noindex`` and ``nofollow``; a past ``unavailable_after`` at ``now`` adds
        ``noindex``)."""
        names = ("robots", agent.lower())
        contents = [content for name, content in self._robots_metas if name in names]
        return parse_directives(", ".join(contents), float("-inf") if now is None else now)

    @cached_property
    def _robots_metas(self) -> list[tuple[str, str]]:
        """Every ``<meta name content>``: (name lower case, content)."""
        return [((m.attributes.get("name") or "").strip().lower(), m.attributes.get("content") or "")
                for m in self.tree.css("meta[name]")]

    @cached_property
    def links(self) -> list[ExtractedLink]:
        """``<a href>``, ``<area href>`` and ``<link rel=next|alternate href>``, in document order;
        the first ``max_links`` of them (a link farm's page names tens of thousands of hosts)."""
        out: list[ExtractedLink] = []
        for node in self.tree.css("a[href], area[href], link[href]"):
            if self.max_links and len(out) >= self.max_links:
                self.links_cut = True
                break
            attrs = node.attributes
            rel = (attrs.get("rel") or "").lower().split()
            tag = node.tag
            if tag == "link":
                if FOLLOW_LINK_RELS.isdisjoint(rel):
                    continue
                anchor = ""
            elif tag == "area":
                anchor = clean(attrs.get("alt") or "")
            else:
                anchor = clean(node.text(deep=True, separator=" "))
            out.append(ExtractedLink(attrs.get("href") or "", anchor, "nofollow" in rel, tag))
        return out

    @cached_property
    def requisites(self) -> list[Requisite]:
        """What a browser fetches to show the page (:mod:`crawlproj.content.requisites`), as written."""
        return page_requisites(self.tree.css(REQUISITE_SELECTOR))

    @cached_property
    def _body_text(self) -> str:
        """The body's text (the document's without one), scripts and styles included, whitespace folded."""
        root = self.tree.body if self.tree.body is not None else self.tree.root
        return clean(root.text(deep=True, separator=" ")) if root is not None else ""

    @cached_property
    def text_digest(self) -> bytes | None:
        """A digest of the page's text, whitespace folded (None when it has none): two pages with
        one digest read the same, whatever their links' hrefs (a session id in every link)."""
        text = self._body_text
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest() if text else None

    # -- what the render detector reads --------------------------------------
    @cached_property
    def anchor_count(self) -> int:
        """``<a href>`` elements (the detector's "links")."""
        return sum(1 for link in self.links if link.kind == "a")

    @cached_property
    def visible_text_chars(self) -> int:
        """Characters of visible body text, whitespace folded (scripts, styles, ``<noscript>``
        and ``<template>`` left out; exact to one character per left-out element)."""
        body = self.tree.body
        root = body if body is not None else self.tree.root
        if root is None:
            return 0
        total = len(self._body_text)
        hidden = sum(len(clean(node.text(deep=True, separator=" "))) + 1
                     for node in root.css(", ".join(INVISIBLE)))
        return max(0, total - hidden)

    def text_pieces(self, limit: int) -> int:
        """Visible text nodes of the body (whitespace-only and invisible ones left out), counted
        up to ``limit``: a Python walk, for small pages only (the detector's shell test)."""
        counted = self._pieces.get(limit)
        if counted is None:
            counted = self._pieces[limit] = self._count_pieces(limit)
        return counted

    def _count_pieces(self, limit: int) -> int:
        root = self.tree.body
        count = 0
        for node in root.traverse(include_text=True) if root is not None else ():
            if node.tag != "-text" or not node.text_content.strip():
                continue
            parent = node.parent
            while parent is not None and parent.tag not in INVISIBLE:
                parent = parent.parent
            if parent is None:
                count += 1
                if count >= limit:
                    break
        return count

    @cached_property
    def scripts(self) -> Scripts:
        """The page's scripts, classic or module, external or inline (data blocks left out)."""
        external = inline = inline_bytes = module = 0
        for node in self.tree.css("script"):
            attrs = node.attributes
            kind = (attrs.get("type") or "").split(";")[0].strip().lower()
            if kind not in SCRIPT_TYPES:
                continue  # a data block: JSON-LD, an import map, a template
            module += kind == "module"
            if (attrs.get("src") or "").strip():
                external += 1
            else:
                text = node.text(deep=True)
                if text.strip():
                    inline += 1
                    inline_bytes += len(text)
        return Scripts(external, inline, inline_bytes, module)
