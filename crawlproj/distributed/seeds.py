"""Start URLs pushed to a running distributed crawl (``scrapy seed FILE``)."""

from __future__ import annotations

import logging
import time

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, NotConfigured
from twisted.internet import task

logger = logging.getLogger(__name__)

BATCH = 200


def start_urls_key(settings) -> str:
    return settings.get("REDIS_START_URLS_KEY").replace("{prefix}", settings.get("REDIS_PREFIX"))


class RedisSeeds:
    """Reads start URLs from the Redis list ``REDIS_START_URLS_KEY`` into the crawl.

    Like scrapy-redis's ``RedisSpider`` it looks when the spider goes idle, and also
    every second while it is busy, so seeds added to a running crawl start at once. A
    worker with nothing to do anywhere in the shared frontier waits ``WORKER_IDLE_TIMEOUT``
    seconds for seeds before it exits (workers started before the seeds are pushed).
    Each URL is canonicalised and goes through the shared URL-seen filter, so a seed
    pushed twice, or already found by a worker, is crawled once. Active only with the
    distributed scheduler.
    """

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        if not s.get("SCHEDULER", "").startswith("crawlproj.distributed."):
            raise NotConfigured
        self.crawler = crawler
        self.key = start_urls_key(s)
        self.idle_timeout = s.getfloat("WORKER_IDLE_TIMEOUT")
        self._idle_since: float | None = None
        self.client = None
        self.spider: Spider | None = None
        self._loop: task.LoopingCall | None = None
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)
        crawler.signals.connect(self.idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisSeeds:
        return cls(crawler)

    def opened(self, spider: Spider) -> None:
        from . import connection  # here: Redis is the distributed extra's, and this is listed in every crawl

        self.spider = spider
        self.client = connection.from_settings(self.crawler.settings)
        self._loop = task.LoopingCall(self.read)
        self._loop.start(1.0, now=True)

    def closed(self, spider: Spider) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()

    def read(self) -> int:
        """Move up to a batch of start URLs into the crawl; how many were read."""
        if self.client is None or self.spider is None or not hasattr(self.spider, "canonical"):
            return 0
        raw = self.client.lpop(self.key, BATCH) or []
        if raw:
            self._idle_since = None
        for value in raw:
            url = self.spider.canonical(value.decode("utf-8", "replace").strip())
            if url:
                self.crawler.engine.crawl(self.spider.request(url))
                self.crawler.stats.inc_value("distributed/seeds_read")
        return len(raw)

    def idle(self, spider: Spider) -> None:
        if self.read():
            raise DontCloseSpider
        now = time.monotonic()
        if self._idle_since is None:
            self._idle_since = now
        if now - self._idle_since < self.idle_timeout:
            raise DontCloseSpider
