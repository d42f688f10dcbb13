"""Extraction from a fetched HTML page: links with anchor text, robots directives, title, text.

Works on a :class:`parsel.Selector` and the page's URL, so it is testable
without a crawl. URLs come out canonical (:func:`crawlproj.urls.canonicalize`);
the ones the canonicaliser refuses come back with their reason so the caller
can count them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from parsel import Selector

from ..urls import InvalidURL, canonicalize

_SPACE = re.compile(r"\s+")
_FOLLOW_LINK_RELS = {"next", "alternate"}


def is_html(content_type: str | bytes | None) -> bool:
    """Whether a Content-Type names HTML; a response without one is taken as HTML."""
    if isinstance(content_type, bytes):
        content_type = content_type.decode("latin-1")
    return not content_type or "html" in content_type.lower()


@dataclass(frozen=True)
class ExtractedLink:
    url: str
    anchor: str
    nofollow: bool
    kind: str  # a | area | link


def _clean(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def base_url(sel: Selector, page_url: str) -> str:
    """The URL relative links resolve against: <base href> if present and valid."""
    href = sel.xpath("//head/base/@href | //base/@href").get()
    if href:
        try:
            return canonicalize(href, page_url)
        except InvalidURL:
            pass
    return page_url


def robots_directives(sel: Selector, agent: str = "crawlproj") -> set[str]:
    """Directives of <meta name=robots> and <meta name=AGENT> (lower case)."""
    out: set[str] = set()
    for meta in sel.xpath("//meta[@name]"):
        name = (meta.attrib.get("name") or "").strip().lower()
        if name in ("robots", agent.lower()):
            out.update(d.strip().lower() for d in (meta.attrib.get("content") or "").split(",") if d.strip())
    if "none" in out:
        out.update({"noindex", "nofollow"})
    return out


def iter_links(
    sel: Selector,
    page_url: str,
    *,
    session_params: tuple[str, ...] | frozenset[str] = (),
    max_length: int = 2048,
) -> Iterator[ExtractedLink | InvalidURL]:
    """Every link of the page: <a href>, <area href>, <link rel=next|alternate href>."""
    base = base_url(sel, page_url)
    for node in sel.xpath("//a[@href] | //area[@href] | //link[@href]"):
        tag = node.root.tag.lower() if isinstance(node.root.tag, str) else ""
        rel = set((node.attrib.get("rel") or "").lower().split())
        if tag == "link":
            if not rel & _FOLLOW_LINK_RELS:
                continue
            anchor = ""
        elif tag == "area":
            anchor = _clean(node.attrib.get("alt") or "")
        else:
            anchor = _clean(" ".join(node.xpath(".//text()").getall()))
        href = node.attrib["href"]
        try:
            url = canonicalize(href, base, session_params=session_params, max_length=max_length)
        except InvalidURL as exc:
            yield exc
            continue
        yield ExtractedLink(url, anchor, "nofollow" in rel, tag or "a")


def page_title(sel: Selector) -> str | None:
    title = sel.xpath("//title/text()").get()
    return _clean(title) if title else None


def title_and_text(sel: Selector) -> tuple[str | None, str]:
    """The page title and its visible text (scripts and styles left out)."""
    parts = sel.xpath("//body//text()[not(ancestor::script) and not(ancestor::style) and not(ancestor::noscript)]").getall()
    return page_title(sel), _clean(" ".join(parts))
