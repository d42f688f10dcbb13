"""Watches: what of a page to watch (a CSS or XPath selection) and how often (pure but for
:class:`WatchList`, which reads the store's ``watches`` table).

A watch's selection is its content: the text of the elements its selector picks, a line per
block, and their links. With no selector the page's main text is compared, as for every page.
"""

from __future__ import annotations

import re
import sqlite3
import time
from urllib.parse import urljoin

from parsel import Selector

from ..store.changes import Watch, list_watches
from .classify import Snapshot

UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
#: Elements that start a line of a selection's text.
BLOCKS = {"p", "div", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "br", "section", "article", "pre",
          "dd", "dt", "dl", "table", "blockquote", "header", "footer", "main", "nav", "aside", "form", "figure"}
UNSEEN = {"script", "style", "noscript", "template"}


def parse_duration(text: str) -> float:
    """Seconds in ``90``, ``90s``, ``15m``, ``2h``, ``1d``, ``1w`` or ``1h30m``; ValueError otherwise."""
    parts = re.fullmatch(r"\s*((?:\d+(?:\.\d+)?\s*(?:s|min|m|h|d|w)?\s*)+)", text or "")
    if not parts:
        raise ValueError(f"not a duration: {text!r} (e.g. 90s, 15m, 2h, 1d)")
    total = sum(float(n) * UNITS[u or "s"] for n, u in re.findall(r"(\d+(?:\.\d+)?)\s*(min|s|m|h|d|w)?", text))
    if total <= 0:
        raise ValueError(f"not a duration: {text!r} (it must be more than 0)")
    return total


def check_selector(css: str | None, xpath: str | None) -> None:
    """ValueError naming the cause when a selector does not parse."""
    try:
        if css:
            Selector(text="<html></html>").css(css)
        if xpath:
            Selector(text="<html></html>").xpath(xpath)
    except Exception as exc:  # parsel raises cssselect's and lxml's own errors
        kind = "CSS selector" if css else "XPath expression"
        raise ValueError(f"not a valid {kind} {css or xpath!r}: {exc}") from None


def _text(node, out: list[str]) -> None:
    if not isinstance(node.tag, str) or node.tag in UNSEEN:  # a comment, a processing instruction, a script
        return
    tag = node.tag
    block = tag in BLOCKS
    if block:
        out.append("\n")
    out.append(node.text or "")
    for child in node:
        _text(child, out)
        out.append(child.tail or "")
    if block:
        out.append("\n")


def selection(body: bytes | str, url: str, css: str | None = None, xpath: str | None = None) -> Snapshot:
    """The watched content of a page: the selected elements' text (a line per block) and links,
    and the page's title."""
    # As HTML always: parsel takes a page with an XML declaration (DocBook's XHTML) for XML, where
    # no CSS selector matches for want of its namespace.
    sel = Selector(text=body.decode("utf-8", "replace") if isinstance(body, bytes) else body, type="html")
    title = sel.css("title::text").get()
    picked = sel.css(css) if css else sel.xpath(xpath)
    out: list[str] = []
    links: list[str] = []
    for el in picked:
        root = el.root
        if isinstance(root, str):  # an XPath picking text or attributes
            out.append("\n" + root + "\n")
            continue
        _text(root, out)
        out.append("\n")
        links.extend(urljoin(url, h) for h in el.xpath(".//@href").getall())
    lines = (re.sub(r"\s+", " ", line).strip() for line in "".join(out).splitlines())
    return Snapshot(title.strip() if title else None, "\n".join(line for line in lines if line), tuple(links))


class WatchList:
    """The store's watches, read again every ``every`` seconds (a watch added while the crawl
    runs is picked up)."""

    def __init__(self, path: str, every: float = 5.0) -> None:
        self.path = path
        self.every = every
        self._read_at = float("-inf")
        self._watches: dict[str, Watch] = {}
        self.version = 0  # bumped when what is watched changed

    def _refresh(self) -> None:
        if time.monotonic() - self._read_at < self.every:
            return
        self._read_at = time.monotonic()
        try:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=1)
            try:
                watches = {w.url: w for w in list_watches(conn)}
            finally:
                conn.close()
        except sqlite3.Error:
            return  # no store yet, or busy: the last reading stands
        if watches != self._watches:
            self._watches = watches
            self.version += 1

    def all(self) -> dict[str, Watch]:
        self._refresh()
        return self._watches

    def get(self, url: str) -> Watch | None:
        return self.all().get(url)
