"""One record per stored page, as feeds and ``scrapy export`` write it (pure: no Scrapy, no I/O).

:func:`record` makes it from a :class:`~crawlproj.items.PageItem`: the one a crawl hands its
feeds, or one read back from the store (:mod:`crawlproj.exports.reading`), so a feed and an
export of the same crawl hold the same records. Values are typed (``fetched_at`` a UTC
datetime, ``links`` a list of objects); each format writes them its way
(:mod:`crawlproj.exports.feeds`: ISO 8601 text, JSON in CSV cells, Parquet's own types).
"""

from __future__ import annotations

import base64
from datetime import datetime, timezone
from typing import Any

from ..items import PageItem

#: The fields of a record unless FEED_EXPORT_FIELDS (or --fields) names others, in this order.
DEFAULT_FIELDS = ("url", "final_url", "status", "fetched_at", "content_type", "language", "title", "description",
                  "author", "published", "modified", "canonical_url", "text", "markdown", "links", "duplicate_of",
                  "warc_file", "warc_offset")
#: More of what the store keeps, when named.
EXTRA_FIELDS = ("host", "depth", "charset", "bytes", "content_hash", "fetch_duration", "rendered", "duplicate_kind",
                "limited", "text_chars", "markdown_chars")
#: What only a crawl's feeds have (the store keeps no bodies or headers: the WARC files do), when named.
FEED_ONLY_FIELDS = ("body", "body_encoding", "response_headers", "request_headers")
FIELDS = DEFAULT_FIELDS + EXTRA_FIELDS + FEED_ONLY_FIELDS

#: Content types whose body a record gives as text (decoded with the page's charset); any other
#: body is given in base64. ``body_encoding`` says which: "text" or "base64".
TEXT_TYPES = ("text/", "application/xhtml+xml", "application/xml", "application/json", "application/javascript",
              "application/ecmascript", "application/rss+xml", "application/atom+xml", "image/svg+xml")


def utc(timestamp: float | None) -> datetime | None:
    return None if timestamp is None else datetime.fromtimestamp(timestamp, timezone.utc)


def iso(moment: datetime) -> str:
    """``2025-03-01T09:30:05.123Z``: ISO 8601 in UTC, to the millisecond."""
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def links(item: PageItem) -> list[dict[str, Any]]:
    """The page's links as the store keeps them: once per (target, anchor), the first one's
    nofollow, in (target, anchor) order."""
    seen: dict[tuple[str, str], bool] = {}
    for target, anchor, nofollow in item.links:
        seen.setdefault((target, anchor), bool(nofollow))
    return [{"url": target, "anchor": anchor, "nofollow": nofollow} for (target, anchor), nofollow in sorted(seen.items())]


def is_text(content_type: str | None) -> bool:
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    return kind.startswith(TEXT_TYPES) or kind.endswith(("+xml", "+json"))


def body_encoding(item: PageItem) -> str:
    return "text" if is_text(item.content_type) else "base64"


def body(item: PageItem) -> str:
    if is_text(item.content_type):
        try:
            return item.body.decode(item.charset or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            return item.body.decode("utf-8", errors="replace")
    return base64.b64encode(item.body).decode("ascii")


def _headers(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in pairs]


def _content(name: str):
    return lambda item: getattr(item.content, name) if item.content is not None else None


def _chars(name: str):
    return lambda item: len(getattr(item.content, name) or "") if item.content is not None else None


#: How each field is read from a page.
_GETTERS = {
    "fetched_at": lambda item: utc(item.fetched_at),
    "title": lambda item: (item.content.title if item.content is not None else None) or item.title,
    "language": lambda item: item.language or (item.content.language if item.content is not None else None) or None,
    "links": links,
    "body": body,
    "body_encoding": body_encoding,
    "response_headers": lambda item: _headers(item.response_headers),
    "request_headers": lambda item: _headers(item.request_headers),
    "rendered": lambda item: bool(item.rendered),
    **{name: _content(name) for name in ("description", "author", "published", "modified", "canonical_url", "text",
                                         "markdown", "limited")},
    "text_chars": _chars("text"),
    "markdown_chars": _chars("markdown"),
}


def record(item: PageItem, fields: tuple[str, ...] = DEFAULT_FIELDS) -> dict[str, Any]:
    """The page's record: ``fields`` (names from :data:`FIELDS`) in that order. The item's
    ``content`` is taken as kept (:func:`crawlproj.store.content.kept`)."""
    return {name: (_GETTERS[name](item) if name in _GETTERS else getattr(item, name)) for name in fields}


def unknown_fields(fields: list | dict | tuple) -> list[str]:
    return [name for name in fields if name not in FIELDS]
