"""Reactor stalls: how long the crawl's one thread was held (an extension, and the bookkeeping).

Everything in a crawl process (every host's next request, every download's bytes)
waits while the reactor's thread runs one piece of work. A tick scheduled every
``STALL_TICK`` seconds measures how late it runs: the lateness is the time the reactor
was held. The longest is ``reactor/max_stall_seconds``, and stalls of at least
``STALL_WARN`` seconds are counted (``reactor/stalls``) and logged: the page budget
(:mod:`crawlproj.content.budget`, :mod:`crawlproj.content.offload`) exists so that
there are none.

:class:`ReactorLag` is the bookkeeping (pure). The frontier keeps one too: time the
reactor was held while a download was in flight is the crawler's doing, not the
server's, and is taken off the fetch duration the politeness rules read.
"""

from __future__ import annotations

import logging
import time

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet import task

logger = logging.getLogger(__name__)


class ReactorLag:
    """How late a tick due every ``tick`` seconds ran: each lateness, their sum and the longest (pure).

    A stall is seen when it covers a tick's due time, so the sum never overstates the time
    the thread was held (a stall between two due times can be missed)."""

    def __init__(self, tick: float) -> None:
        self.tick = tick
        self.total = 0.0
        self.longest = 0.0
        self._due: float | None = None

    def ticked(self, now: float) -> float:
        """Record a tick that ran at ``now``; returns its lateness."""
        late = max(0.0, now - self._due) if self._due is not None else 0.0
        self._due = now + self.tick
        self.total += late
        self.longest = max(self.longest, late)
        return late


class StallMonitor:
    """Measures how late a periodic tick runs on the reactor."""

    def __init__(self, crawler: Crawler, tick: float, warn: float) -> None:
        self.stats = crawler.stats
        self.tick, self.warn = tick, warn
        self.lag = ReactorLag(tick)
        self._loop = task.LoopingCall(self._check)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StallMonitor:
        s = crawler.settings
        tick = s.getfloat("STALL_TICK")
        if tick <= 0:
            raise NotConfigured
        ext = cls(crawler, tick, s.getfloat("STALL_WARN"))
        crawler.signals.connect(ext.start, signal=signals.engine_started)
        crawler.signals.connect(ext.stop, signal=signals.engine_stopped)
        return ext

    def start(self) -> None:
        self.lag.ticked(time.monotonic())
        self._loop.start(self.tick, now=False)

    def _check(self) -> None:
        longest = self.lag.longest
        late = self.lag.ticked(time.monotonic())
        if late > longest:
            self.stats.set_value("reactor/max_stall_seconds", round(late, 3))
        if late >= self.warn:
            self.stats.inc_value("reactor/stalls")
            logger.warning("the reactor was held %.2f s", late)

    def stop(self) -> None:
        if self._loop.running:
            self._loop.stop()
