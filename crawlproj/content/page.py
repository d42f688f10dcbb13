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

import re
from dataclasses import dataclass
from functools import cached_property

from selectolax.lexbor import LexborHTMLParser

from .budget import PageBudget

_SPACE = re.compile(r"\s+")
#: ``<link rel=...>`` kinds that name another page to crawl.
FOLLOW_LINK_RELS = frozenset({"next", "alternate"})
#: Elements whose text a browser does not show.
INVISIBLE = ("script", "style", "noscript", "template")


def clean(text: str) -> str:
    """Whitespace runs folded to one space, ends stripped."""
    return _SPACE.sub(" ", text).strip()


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
    :attr:`over_budget` then names the bound (``depth`` or ``elements``)."""

    def __init__(self, html: str, budget: PageBudget | None = None) -> None:
        self.over_budget: str | None = None
        if budget is not None:
            html, found = budget.bounded(html)
            self.over_budget = found.cut_reason
        self.html = html
        self.tree = LexborHTMLParser(html)

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
    def base_href(self) -> str | None:
        """The first ``<base href>``, as written."""
        node = self.tree.css_first("base[href]")
        return node.attributes.get("href") if node is not None else None

    def robots_directives(self, agent: str = "crawlproj") -> set[str]:
        """Directives of ``<meta name=robots>`` and ``<meta name=AGENT>``, lower case
        (``none`` adds ``noindex`` and ``nofollow``)."""
        out: set[str] = set()
        names = ("robots", agent.lower())
        for meta in self.tree.css("meta[name]"):
            attrs = meta.attributes
            if (attrs.get("name") or "").strip().lower() in names:
                out.update(d.strip().lower() for d in (attrs.get("content") or "").split(",") if d.strip())
        if "none" in out:
            out.update({"noindex", "nofollow"})
        return out

    @cached_property
    def links(self) -> list[ExtractedLink]:
        """``<a href>``, ``<area href>`` and ``<link rel=next|alternate href>``, in document order."""
        out = []
        for node in self.tree.css("a[href], area[href], link[href]"):
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
        total = len(clean(root.text(deep=True, separator=" ")))
        hidden = sum(len(clean(node.text(deep=True, separator=" "))) + 1
                     for node in root.css(", ".join(INVISIBLE)))
        return max(0, total - hidden)

    @cached_property
    def inline_script_bytes(self) -> int:
        """Characters of inline script (``<script>`` without ``src``)."""
        return sum(len(node.text(deep=True)) for node in self.tree.css("script:not([src])"))

    @cached_property
    def external_scripts(self) -> int:
        """``<script src>`` elements."""
        return len(self.tree.css("script[src]"))

    def noscript_texts(self) -> list[str]:
        return [node.text(deep=True) for node in self.tree.css("noscript")]

    def empty_nodes(self, selector: str) -> bool:
        """Whether any node matching ``selector`` has no element child and no text."""
        for node in self.tree.css(selector):
            if node.child is None or (not node.css_first("*") and not node.text(deep=True).strip()):
                return True
        return False
