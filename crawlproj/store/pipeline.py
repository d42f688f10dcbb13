"""The storage item pipeline: the Scrapy adapter of the store."""

from __future__ import annotations

import logging
import time

from scrapy import Spider
from scrapy.crawler import Crawler
from twisted.internet import task

from .. import signals as crawl_signals
from ..items import FetchError, PageItem, Skipped
from . import open_store

logger = logging.getLogger(__name__)


class StorePipeline:
    """Writes pages, links, hosts and fetch errors to ``STORE_URI`` in batches.

    A batch is committed when it reaches ``STORE_BATCH_SIZE`` rows, every
    ``STORE_FLUSH_INTERVAL`` seconds, and when the spider closes. After each
    commit it sends :data:`crawlproj.signals.pages_committed`: only then does a
    page count as completed.
    """

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.uri = settings.get("STORE_URI")
        self.batch_size = settings.getint("STORE_BATCH_SIZE")
        self.flush_interval = settings.getfloat("STORE_FLUSH_INTERVAL")
        self.store = open_store(self.uri)
        self._loop: task.LoopingCall | None = None
        crawler.signals.connect(self.robots_fetched, signal=crawl_signals.robots_fetched)
        crawler.signals.connect(self.store.add_host_error, signal=crawl_signals.host_error)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        return cls(crawler)

    def open_spider(self, spider: Spider | None = None) -> None:
        self._loop = task.LoopingCall(self.flush)
        self._loop.start(self.flush_interval, now=False)
        logger.info("storing to %s", self.uri)

    def process_item(self, item: object, spider: Spider | None = None) -> object:
        if isinstance(item, PageItem):
            self.store.add_page(item)
        elif isinstance(item, FetchError):
            self.store.add_error(item)
        elif isinstance(item, Skipped):
            self.store.add_skipped(item.url)
        if self.store.pending >= self.batch_size:
            self.flush()
        return item

    def robots_fetched(self, host: str, status: int | None) -> None:
        self.store.set_robots(host, status, time.time())

    def flush(self) -> None:
        if self.store.pending:
            self.crawler.signals.send_catch_log(crawl_signals.store_committing)
        urls = self.store.commit()
        stats = self.crawler.stats
        if stats is not None and self.store.commits:
            stats.set_value("store/commits", self.store.commits)
            stats.inc_value("store/urls_completed", len(urls))
        if urls:
            self.crawler.signals.send_catch_log(crawl_signals.pages_committed, urls=urls)

    def close_spider(self, spider: Spider | None = None) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.flush()
        self.store.close()
