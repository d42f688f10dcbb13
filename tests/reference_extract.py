"""The parsel extraction crawlproj used before the one-parse rewrite: the oracle of
tests/test_extraction_equivalence.py (kept as it was, never used by the crawler)."""

from __future__ import annotations

import re

from parsel import Selector

from crawlproj.urls import InvalidURL, canonicalize

_SPACE = re.compile(r"\s+")
_FOLLOW_LINK_RELS = {"next", "alternate"}


def _clean(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def base_url(sel: Selector, page_url: str) -> str:
    href = sel.xpath("//head/base/@href | //base/@href").get()
    if href:
        try:
            return canonicalize(href, page_url)
        except InvalidURL:
            pass
    return page_url


def robots_directives(sel: Selector, agent: str = "crawlproj") -> set[str]:
    out: set[str] = set()
    for meta in sel.xpath("//meta[@name]"):
        name = (meta.attrib.get("name") or "").strip().lower()
        if name in ("robots", agent.lower()):
            out.update(d.strip().lower() for d in (meta.attrib.get("content") or "").split(",") if d.strip())
    if "none" in out:
        out.update({"noindex", "nofollow"})
    return out


def links(sel: Selector, page_url: str) -> list[tuple[str, str, bool] | str]:
    """(url, anchor, nofollow) of every link, or the refusal reason of a link that is refused."""
    base = base_url(sel, page_url)
    out: list[tuple[str, str, bool] | str] = []
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
        try:
            url = canonicalize(node.attrib["href"], base)
        except InvalidURL as exc:
            out.append(exc.reason)
            continue
        out.append((url, anchor, "nofollow" in rel))
    return out


def page_title(sel: Selector) -> str | None:
    title = sel.xpath("//title/text()").get()
    return _clean(title) if title else None
