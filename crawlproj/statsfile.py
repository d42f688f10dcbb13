"""Writes the crawl's final stats as JSON to ``STATS_FILE`` (when set)."""

from __future__ import annotations

import json
import os
import resource

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured


class StatsFile:
    """Dumps ``crawler.stats`` to ``STATS_FILE`` when the spider closes."""

    def __init__(self, crawler: Crawler, path: str) -> None:
        self.crawler = crawler
        self.path = path

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StatsFile:
        path = crawler.settings.get("STATS_FILE")
        if not path:
            raise NotConfigured
        ext = cls(crawler, path)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_closed(self, spider: object, reason: str) -> None:
        stats = dict(self.crawler.stats.get_stats())
        stats["finish_reason"] = reason
        times = os.times()  # this process only; worker processes are not counted
        stats["process/cpu_seconds"] = round(times.user + times.system, 3)
        stats["process/max_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with open(self.path, "w", encoding="utf-8") as fh:
            json.dump(stats, fh, default=str, indent=1, sort_keys=True)
