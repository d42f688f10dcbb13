"""RSS and Atom feeds: their entries' links and dates (pure: bytes in, a :class:`FeedDocument` out).

Read with feedparser (RSS 0.9x, 1.0 and 2.0, Atom 0.3 and 1.0, and the malformed feeds the
web is full of), given the body as a stream: handed a string, feedparser would fetch it if
it looked like a URL or open it if it named a file. It fetches no external entity either.
An entry's ``updated`` (else ``published``) date is change evidence for the page it links,
as a sitemap's ``<lastmod>`` is; a date more than a day ahead of the crawler's clock is a
lie and dropped, and so are the dates of a feed whose every entry is dated the moment it
was served (the server's clock, not the entries').
"""

from __future__ import annotations

import calendar
import io
import re
import time
from dataclasses import dataclass, field

from .sitemaps import SitemapEntry

FEED_TYPES = ("application/rss+xml", "application/atom+xml", "application/rdf+xml", "application/rss",
              "application/x-rss+xml", "application/atom")
#: The root element of RSS 0.9x/2.0 (rss), Atom (feed) and RSS 1.0 (rdf:RDF), near the start.
_FEED_ROOT = re.compile(rb"<(?:[A-Za-z][\w.-]*:)?(?:rss|feed|RDF)[\s>/]")
SNIFF_BYTES = 1024
FUTURE_SLACK = 86400.0  # seconds a date may run ahead of our clock (time zones, skew)
CLOCK_DATES = 300.0  # entries all dated within this of our clock, to the second: the server's clock


def is_feed(content_type: str | bytes | None, body: bytes) -> bool:
    """Whether a response is a feed: by its Content-Type, or an XML one (or one without a type)
    whose root element is a feed's."""
    if isinstance(content_type, bytes):
        content_type = content_type.decode("latin-1")
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind in FEED_TYPES:
        return True
    if kind in ("", "text/xml", "application/xml", "text/plain", "application/octet-stream"):
        return bool(_FEED_ROOT.search(body[:SNIFF_BYTES]))
    return False


@dataclass
class FeedDocument:
    """What a feed gave: its entries (link and date) in feed order. ``outcome``: None, or
    ``feed_malformed`` (nothing readable), ``over_budget/feed_entries`` (entries past the cap
    left out). ``pages`` counts entries, so the store's documents table reads alike for both."""

    kind: str = "feed"
    format: str = ""  # feedparser's version: rss20, atom10, rss10, ...
    title: str | None = None
    author: str | None = None
    language: str | None = None
    entries: list[SitemapEntry] = field(default_factory=list)
    pages: int = 0  # entries in the feed
    pages_read: int = 0
    text: str = ""  # the entries' titles, one a line
    dates_ignored: bool = False  # every entry was dated the moment it was served: the dates were dropped
    outcome: str | None = None

    @property
    def links(self) -> list[str]:
        return [entry.loc for entry in self.entries]


def _seconds(parsed: time.struct_time | None, now: float) -> float | None:
    if parsed is None:
        return None
    try:
        at = float(calendar.timegm(parsed))
    except (OverflowError, ValueError, TypeError):
        return None
    return at if at <= now + FUTURE_SLACK else None


def read_feed(body: bytes, url: str, content_type: str | None = None, max_entries: int = 10_000,
              now: float | None = None) -> FeedDocument:
    """The entries, title and language of the feed in ``body``, fetched from ``url``."""
    import feedparser

    now = time.time() if now is None else now
    parsed = feedparser.parse(io.BytesIO(body), response_headers={"content-location": url,
                                                                  "content-type": content_type or "application/xml"},
                              sanitize_html=False, resolve_relative_uris=False)
    feed = parsed.get("feed", {})
    doc = FeedDocument(format=parsed.get("version") or "", title=(feed.get("title") or "").strip() or None,
                       author=(feed.get("author") or "").strip() or None,
                       language=((feed.get("language") or "").split("-")[0].strip().lower() or None),
                       pages=len(parsed.entries))
    if not doc.format and not parsed.entries:
        doc.outcome = "feed_malformed"
        return doc
    titles, seen = [], set()
    for entry in parsed.entries[:max_entries]:
        doc.pages_read += 1
        link = (entry.get("link") or "").strip()
        if not link or link in seen:
            continue
        seen.add(link)
        # dict.get: feedparser's own get maps a missing updated_parsed to published_parsed with a warning
        dated = dict.get(entry, "updated_parsed") or dict.get(entry, "published_parsed")
        doc.entries.append(SitemapEntry(link, _seconds(dated, now)))
        titles.append(" ".join((entry.get("title") or "").split()))
    doc.text = "\n".join(titles)
    dates = [e.lastmod for e in doc.entries if e.lastmod is not None]
    if len(dates) >= 2 and max(dates) - min(dates) < 1.0 and abs(now - max(dates)) < CLOCK_DATES:
        # Every entry "changed" this very moment: the server's clock, not the entries' (as a
        # Last-Modified of the request time): it says nothing, and believed it would make every
        # page due at each reading of the feed.
        doc.entries = [SitemapEntry(e.loc) for e in doc.entries]
        doc.dates_ignored = True
    if doc.pages_read < doc.pages:
        doc.outcome = "over_budget/feed_entries"
    return doc
