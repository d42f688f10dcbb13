"""The storage item pipeline: the Scrapy adapter of the store."""

from __future__ import annotations

import logging
import time

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet import defer, task

from .. import signals as crawl_signals
from ..items import FetchError, PageItem, RequisiteItem, SitemapUrls, Skipped
from . import open_store
from .content import ContentPolicy
from .sqlite import StoreBatch
from .writer import WriterThread

logger = logging.getLogger(__name__)


class StorePipeline:
    """Writes pages, links, hosts and fetch errors to ``STORE_URI`` in batches, with each
    page's content and search entry as ``CONTENT_STORE``, ``CONTENT_MARKDOWN``,
    ``CONTENT_MAX_CHARS`` and ``CONTENT_SEARCH`` say (:mod:`crawlproj.store.content`).

    A batch is committed when it reaches ``STORE_BATCH_SIZE`` rows, every
    ``STORE_FLUSH_INTERVAL`` seconds, and when the spider closes. After each
    commit it sends :data:`crawlproj.signals.pages_committed`: only then does a
    page count as completed. Batches are written in a writer thread, one at a time:
    rows that arrive meanwhile wait for the next batch. A batch whose write fails is
    kept for the next attempt. Once ``STORE_BACKLOG`` rows wait behind a write, each new
    item waits for that write in the pipeline, so that ``ITEM_BACKLOG`` holds the frontier
    back: a writer slower than the crawl once kept 2,800 pages' text, links and revisit
    state in memory (800 MB on the Apache manual, rustdoc and LilyPond).
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.uri = settings.get("STORE_URI")
        self.batch_size = settings.getint("STORE_BATCH_SIZE")
        self.flush_interval = settings.getfloat("STORE_FLUSH_INTERVAL")
        self.backlog = settings.getint("STORE_BACKLOG")
        self.store = open_store(self.uri, ContentPolicy.from_settings(settings))
        # Off the reactor: a batch commit held it up to 380 ms (see crawlproj.store.writer).
        self.writer = WriterThread("store")
        self._writing: defer.Deferred | None = None
        self._loop: task.LoopingCall | None = None
        crawler.signals.connect(self.robots_fetched, signal=crawl_signals.robots_fetched)
        crawler.signals.connect(self.store.add_host_error, signal=crawl_signals.host_error)
        crawler.signals.connect(self.store.set_render_host, signal=crawl_signals.render_evidence)
        crawler.signals.connect(self.ai_signals, signal=crawl_signals.ai_signals)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        return cls(crawler)

    def open_spider(self, spider: Spider | None = None) -> None:
        self._loop = task.LoopingCall(self._flush_kept)
        self._loop.start(self.flush_interval, now=False)
        logger.info("storing to %s", self.uri)

    def process_item(self, item: object, spider: Spider | None = None) -> object:
        if isinstance(item, PageItem):
            self.store.add_page(item)
            self.crawler.stats.inc_value("store/pages")
        elif isinstance(item, FetchError):
            self.store.add_error(item)
        elif isinstance(item, Skipped):
            self.store.add_skipped(item.url)
        elif isinstance(item, RequisiteItem) and item.requested:  # archived, not a page: only its completion
            self.store.add_skipped(item.requested_url)
        elif isinstance(item, SitemapUrls):
            self.store.add_sitemap_urls(item.sitemap, item.entries, item.at)
        if self.store.pending >= self.batch_size:
            self._flush_kept()
        if self.backlog and self._writing is not None and self.store.pending >= self.backlog:
            self.crawler.stats.inc_value("store/backlog_waits")
            waiting: defer.Deferred = defer.Deferred()

            def written(result: object) -> object:
                waiting.callback(item)
                return result  # the write's own outcome, for its other callbacks

            self._writing.addBoth(written)
            return self._wait(waiting)
        return item

    @staticmethod
    async def _wait(waiting: defer.Deferred) -> object:
        """A coroutine: Scrapy deprecates Deferreds from ``process_item``."""
        return await maybe_deferred_to_future(waiting)

    def robots_fetched(self, host: str, status: int | None) -> None:
        self.store.set_robots(host, status, time.time())

    def ai_signals(self, host: str, source: str, values: dict[str, str]) -> None:
        self.store.set_ai_signals(host, source, values, time.time())

    def flush(self) -> defer.Deferred | None:
        """Start writing what is buffered; the Deferred fires once it is committed (None:
        nothing to write). While a batch is being written, that write's Deferred."""
        if self._writing is not None:
            return self._writing
        if self.store.pending:
            self.crawler.signals.send_catch_log(crawl_signals.store_committing)
        batch = self.store.take()
        if batch is None:
            return None
        writing = deferred_from_coro(self._write(batch))
        if not writing.called:  # without a thread it is written already
            self._writing = writing
        return writing

    async def _write(self, batch: StoreBatch) -> None:
        try:
            urls = await self.writer.run(self.store.write, batch)
        except BaseException:
            self.store.restore(batch)
            raise
        finally:
            self._writing = None
        stats = self.crawler.stats
        if stats is not None:
            stats.set_value("store/commits", self.store.commits)
            stats.set_value("store/last_commit_at", time.time())  # the commit lag monitoring reads
            stats.set_value("store/pending", self.store.pending)
            stats.inc_value("store/urls_completed", len(urls))
        if urls:
            self.crawler.signals.send_catch_log(crawl_signals.pages_committed, urls=urls)

    def _flush_kept(self) -> defer.Deferred | None:
        """The periodic flush: a failed write is logged and its rows kept for the next tick.
        While a batch is being written, nothing: the rows wait for the next batch."""
        if self.crawler.stats is not None:
            self.crawler.stats.set_value("store/pending", self.store.pending)
        if self._writing is not None:
            return None
        writing = self.flush()
        if writing is not None:
            writing.addErrback(lambda failure: logger.error("store commit failed (rows kept): %s", failure.value))
        return writing

    async def close_spider(self, spider: Spider | None = None) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        while self._writing is not None:
            await maybe_deferred_to_future(self._writing)
        last = self.flush()
        if last is not None:
            await maybe_deferred_to_future(last)
        self.writer.close()
        self.store.close()
