"""Python's garbage collector, tuned for a long crawl (an extension).

A crawl process holds a large, long-lived heap from start-up (Scrapy, Twisted, numpy, the
parsers) and then allocates many short-lived objects per page. With the default settings
every full collection walks the whole start-up heap again: measured on real
documentation pages, 0.1-0.3 s pauses every few seconds that freed almost nothing, each
holding every host's next request. Once the engine has started, this extension collects
once and freezes what is left (``gc.freeze()``: those objects are never scanned again),
and raises the first generation's threshold so young objects are collected less often.

Python collects the oldest generation once the middle one has been collected ``GC_THRESHOLDS[2]``
times and what it promoted since is a quarter of what the last full collection kept; with the
start-up heap frozen that second rule no longer holds it back, and at 20 it ran every 2-5 s of
a polite crawl, 60-140 ms each. So the third threshold is raised out of the way and a full
collection runs on a clock instead (``GC_FULL_INTERVAL``): what waits for it grows with every
host a crawl meets (each closed connection leaves Twisted's objects, connector, transport,
factories, Deferreds, in reference cycles that outlive the young collections). The clock is
stretched so the pauses take at most ``GC_FULL_MAX_SHARE`` of the crawl's time; their count,
what they freed and their longest pause are in the stats (``gc/full_*``).
"""

from __future__ import annotations

import gc
import logging
import time

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


def next_full_delay(interval: float, last_pause: float, max_share: float) -> float:
    """Seconds to the next full collection: ``interval``, or longer when the last pause would
    otherwise take more than ``max_share`` of the time (a heap that grew makes pauses longer)."""
    if max_share <= 0:
        return interval
    return max(interval, last_pause / max_share)


class GcTuning:
    """Freezes the start-up heap, sets ``GC_THRESHOLDS`` when the engine starts, and collects
    fully every ``GC_FULL_INTERVAL`` seconds (at most ``GC_FULL_MAX_SHARE`` of the time)."""

    def __init__(self, thresholds: list[int], full_interval: float = 0.0, max_share: float = 0.0,
                 stats: StatsCollector | None = None, clock=None) -> None:
        self.thresholds = thresholds
        self.full_interval = full_interval
        self.max_share = max_share
        self.stats = stats
        self._call = None
        self._clock = clock

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GcTuning:
        if not crawler.settings.getbool("GC_TUNING_ENABLED"):
            raise NotConfigured
        ext = cls([int(x) for x in crawler.settings.getlist("GC_THRESHOLDS")],
                  crawler.settings.getfloat("GC_FULL_INTERVAL"), crawler.settings.getfloat("GC_FULL_MAX_SHARE"),
                  crawler.stats)
        crawler.signals.connect(ext.engine_started, signal=signals.engine_started)
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        return ext

    def engine_started(self) -> None:
        gc.collect()
        gc.freeze()
        if self.thresholds:
            gc.set_threshold(*self.thresholds)
        logger.info("gc: %d start-up objects frozen, thresholds %s", gc.get_freeze_count(), gc.get_threshold())
        if self.full_interval > 0:
            self._call = self.clock.callLater(self.full_interval, self.collect_fully)

    @property
    def clock(self):
        if self._clock is None:
            from twisted.internet import reactor
            self._clock = reactor
        return self._clock

    def collect_fully(self) -> int:
        """One full collection (the frozen start-up heap left out); schedules the next."""
        started = time.perf_counter()
        freed = gc.collect()
        pause = time.perf_counter() - started
        if self.stats is not None:
            self.stats.inc_value("gc/full_collections")
            self.stats.inc_value("gc/full_freed_objects", freed)
            self.stats.inc_value("gc/full_pause_total_s", pause)
            self.stats.max_value("gc/full_pause_max_s", pause)
        logger.debug("gc: full collection freed %d objects in %.3f s", freed, pause)
        if self.full_interval > 0:
            self._call = self.clock.callLater(next_full_delay(self.full_interval, pause, self.max_share),
                                           self.collect_fully)
        return freed

    def engine_stopped(self) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
