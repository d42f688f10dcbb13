"""Writes the crawl's final stats as JSON to ``STATS_FILE`` (by default beside the store)."""

from __future__ import annotations

import json
import os
import resource
import tempfile

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from .console import default_stats_file


class StatsFile:
    """Dumps ``crawler.stats`` to ``STATS_FILE`` when the engine stops, atomically: the file
    holds one whole JSON document whenever it exists (with several workers, the last one's).
    Not at ``spider_closed``: other handlers of that signal are still adding to the stats
    (the WACZ written at close, :class:`~crawlproj.store.wacz.WaczOnClose`)."""

    def __init__(self, crawler: Crawler, path: str) -> None:
        self.crawler = crawler
        self.path = path

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StatsFile:
        path = crawler.settings.get("STATS_FILE") or default_stats_file(crawler.settings.get("STORE_URI"))
        if not path:
            raise NotConfigured
        ext = cls(crawler, path)
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        return ext

    def engine_stopped(self) -> None:
        stats = dict(self.crawler.stats.get_stats())  # finish_reason included (Scrapy's CoreStats)
        times = os.times()  # this process only; worker processes are not counted
        stats["process/cpu_seconds"] = round(times.user + times.system, 3)
        stats["process/max_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        # Written whole, then renamed: the workers of one crawl (WORKERS) close at the same
        # moment with the same STATS_FILE, and two writers into one open file left the tail
        # of the longer document after the shorter one. Now the file is always one document.
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=".stats-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(stats, fh, default=str, indent=1, sort_keys=True)
            os.replace(temporary, self.path)
        except BaseException:
            os.unlink(temporary)
            raise
