"""Python's garbage collector, tuned for a long crawl (an extension).

A crawl process holds a large, long-lived heap from start-up (Scrapy, Twisted, numpy, the
parsers) and then allocates many short-lived objects per page. With the default settings
every full collection walks the whole start-up heap again: measured on real
documentation pages, 0.1-0.3 s pauses every few seconds that freed almost nothing, each
holding every host's next request. Once the engine has started, this extension collects
once and freezes what is left (``gc.freeze()``: those objects are never scanned again),
and raises the first generation's threshold so young objects are collected less often.
Reference cycles are still collected; only the bookkeeping changes.
"""

from __future__ import annotations

import gc
import logging

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

logger = logging.getLogger(__name__)


class GcTuning:
    """Freezes the start-up heap and sets ``GC_THRESHOLDS`` when the engine starts."""

    def __init__(self, thresholds: list[int]) -> None:
        self.thresholds = thresholds

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GcTuning:
        if not crawler.settings.getbool("GC_TUNING_ENABLED"):
            raise NotConfigured
        ext = cls([int(x) for x in crawler.settings.getlist("GC_THRESHOLDS")])
        crawler.signals.connect(ext.engine_started, signal=signals.engine_started)
        return ext

    def engine_started(self) -> None:
        gc.collect()
        gc.freeze()
        if self.thresholds:
            gc.set_threshold(*self.thresholds)
        logger.info("gc: %d start-up objects frozen, thresholds %s", gc.get_freeze_count(), gc.get_threshold())
