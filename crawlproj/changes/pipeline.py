"""The change pipeline: records what each revisit changed and tells people (the Scrapy adapter of
:mod:`.classify`, :mod:`.watches` and :mod:`.webhooks`)."""

from __future__ import annotations

import hashlib
import logging
import re
import sqlite3

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from ..items import PageItem
from ..store import beside_store, settings_store
from ..store.changes import ChangeRecord, WatchSnapshot, get_snapshot
from ..store.content import read as read_content
from ..store.warc import WarcLocation, read_capture
from .classify import Snapshot, compare, markdown_links
from .watches import WatchList, selection
from .webhooks import WebhookSender

logger = logging.getLogger("crawlproj.changes")


def previous_body(warc_file: str | None, offset: int | None) -> bytes | None:
    """The payload of the capture at ``warc_file``/``offset`` (None: none, or not readable)."""
    if not warc_file or offset is None:
        return None
    try:
        kind, _, _, payload = read_capture(WarcLocation(warc_file, offset))
    except (OSError, StopIteration, ValueError):
        return None
    return payload if kind == "response" else None


def change_id(url: str, at: float) -> str:
    return hashlib.sha1(f"{url} {at!r}".encode()).hexdigest()


def console_line(c: ChangeRecord) -> str:
    """The console's line for a meaningful change."""
    what = {"text": "text", "title": "title", "links": "links"}.get(c.reason, c.reason)
    links = f", links +{len(c.links_added)} -{len(c.links_removed)}" if c.links_added or c.links_removed else ""
    return (f"changed: {c.url} ({what}; {c.similarity:.0%} alike, lines +{c.lines_added} -{c.lines_removed}{links}); "
            f"scrapy changes --url {c.url}")


class ChangePipeline:
    """On a revisit that finds new content (a 2xx whose body differs from the stored capture's),
    compares the page's main text (or its watch's selection) with the last capture's
    (:func:`~.classify.compare`) and hands the record to the store with the page
    (``item.change``: the ``changes`` table). A meaningful change is logged on the console
    (``changes/meaningful``) and POSTed to ``WEBHOOK_URLS``; noise is recorded, counted
    (``changes/noise``) and told to no one. ``REVISIT_IGNORE_PATTERNS`` are cut from every
    text, a watch's ``ignore`` from its page's."""

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        if not s.getbool("CHANGES_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.stats = crawler.stats
        self.path = settings_store(s)
        self.ignore = [re.compile(p) for p in s.getlist("REVISIT_IGNORE_PATTERNS")]
        self.watches = WatchList(self.path, s.getfloat("WATCH_REFRESH_SECONDS"))
        self.conn: sqlite3.Connection | None = None
        urls = s.getlist("WEBHOOK_URLS")
        self.webhooks = WebhookSender(
            urls, s.get("WEBHOOK_SECRET"), s.getint("WEBHOOK_RETRIES"), s.getfloat("WEBHOOK_BACKOFF"),
            s.getfloat("WEBHOOK_TIMEOUT"), s.get("WEBHOOK_DEADLETTER_FILE") or beside_store(
                self.path, "webhooks-failed", ".jsonl"), crawler.stats) if urls else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChangePipeline:
        return cls(crawler)

    def close_spider(self, spider: Spider | None = None) -> None:
        if self.webhooks is not None:
            self.webhooks.close()
        if self.conn is not None:
            self.conn.close()

    def _db(self) -> sqlite3.Connection:
        if self.conn is None:  # the store creates the file: opened once the crawl has one
            self.conn = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
        return self.conn

    def process_item(self, item: object, spider: Spider | None = None) -> object:
        if isinstance(item, PageItem) and not item.not_modified and 200 <= item.status < 300:
            try:
                self._page(item)
            except sqlite3.Error as exc:  # a store being created, or busy: this visit goes unrecorded
                logger.warning("change of %s not recorded: %s", item.url, exc)
                self.stats.inc_value("changes/unrecorded")
        return item

    def _page(self, item: PageItem) -> None:
        watch = self.watches.get(item.url)
        selector = watch is not None and (watch.css or watch.xpath)
        if selector:
            after = selection(item.body, item.final_url or item.url, watch.css, watch.xpath)
            item.watch_snapshot = WatchSnapshot(item.url, after.title, after.text, list(after.links))
        conn = self._db()
        try:
            prev = conn.execute("SELECT status, content_hash, fetched_at, warc_file, warc_offset FROM pages "
                                "WHERE url = ?", (item.url,)).fetchone()
        except sqlite3.OperationalError:
            return  # no pages table yet: a first capture
        if prev is None or not (prev[0] and 200 <= prev[0] < 300) or prev[1] == item.content_hash:
            return  # a first capture, or the very same bytes
        if selector:
            old = get_snapshot(conn, item.url)
            if old is not None:
                before = Snapshot(old.title, old.text, tuple(old.links))
            else:  # watched since its last capture: that capture's selection, from its WARC record
                body = previous_body(prev[3], prev[4])
                if body is None:
                    return  # not archived: this capture is the watch's baseline
                before = selection(body, item.final_url or item.url, watch.css, watch.xpath)
        else:
            content = read_content(conn, item.url)
            if content is None or item.content is None:
                self.stats.inc_value("changes/no_text")  # CONTENT_STORE off, or not a page with text
                return
            before = Snapshot(content.title, content.text, tuple(markdown_links(content.markdown)))
            after = Snapshot(item.content.title, item.content.text, tuple(markdown_links(item.content.markdown)))
        ignore = self.ignore + ([re.compile(p) for p in watch.ignore] if watch is not None else [])
        c = compare(before, after, ignore, item.url)
        record = ChangeRecord(change_id(item.url, item.fetched_at), item.url, item.fetched_at, prev[2], item.warc_file,
                              item.warc_offset, prev[3], prev[4], c.meaningful, c.reason, c.similarity,
                              c.lines_added, c.lines_removed, c.title_before, c.title_after, c.links_added,
                              c.links_removed, bool(selector), c.diff)
        item.change = record
        self.stats.inc_value("changes/recorded")
        self.stats.inc_value(f"changes/reason/{c.reason}")
        if not c.meaningful:
            self.stats.inc_value("changes/noise")
            return
        self.stats.inc_value("changes/meaningful")
        logger.info(console_line(record))
        if self.webhooks is not None:
            self.webhooks.send(record.as_json())
