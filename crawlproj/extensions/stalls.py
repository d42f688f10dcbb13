"""Reactor stalls: how long the crawl's one thread was held (an extension, and the bookkeeping).

Everything in a crawl process (every host's next request, every download's bytes)
waits while the reactor's thread runs one piece of work. A tick scheduled every
``STALL_TICK`` seconds measures how late it runs: the lateness is the time the reactor
was held. The longest is ``reactor/max_stall_seconds``; ``reactor/max_stall_own_seconds``
is the longest part of one that the process's own CPU accounts for (on a machine busy with
other processes, a process waiting for a core is late without any work of its own holding
it). Stalls of at least
``STALL_WARN`` seconds are counted (``reactor/stalls``) and logged: the page budget
(:mod:`crawlproj.content.budget`, :mod:`crawlproj.content.offload`) exists so that
there are none.

:class:`ReactorLag` is the bookkeeping (pure).

:class:`IdleTimingEventLoop` (``ASYNCIO_EVENT_LOOP``) is asyncio's selector loop timing
how long it waits for I/O: :func:`loop_busy_seconds` is then the time the thread ran
work, measured exactly. It cannot see the thread held outside its work: waiting for the
GIL that a page thread keeps through one long C call, or for a core. The tick sees
those, but only stalls that cover its due time. Time the thread was held while a
download was in flight is the crawler's doing, not the server's: the Waseda middleware
takes the larger of the two measures (:func:`held_mark`, :func:`crawler_held`) off the
fetch duration the politeness rules read.

:class:`TurnTaker` lets long work on the reactor's thread (a page's thousands of
links) give the reactor a turn every ``turn`` seconds, and :class:`WorkGate` lets only a
few such jobs run side by side.
"""

from __future__ import annotations

import asyncio
import logging
import selectors
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import is_asyncio_available
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
        self.longest_own = 0.0  # the longest lateness the process's own CPU accounts for
        self._due: float | None = None
        self._cpu: float | None = None

    def ticked(self, now: float, cpu: float | None = None) -> float:
        """Record a tick that ran at ``now``; returns its lateness. ``cpu`` (the process's CPU
        seconds then) bounds the part of it the process's own work took: a process that waited
        for a core (other processes busy on the machine) was held by them, not by a page."""
        late = max(0.0, now - self._due) if self._due is not None else 0.0
        if cpu is not None and self._cpu is not None:
            self.longest_own = max(self.longest_own, min(late, max(0.0, cpu - self._cpu - self.tick)))
        self._due, self._cpu = now + self.tick, cpu
        self.total += late
        self.longest = max(self.longest, late)
        return late


class LoopIdle:
    """Seconds the event loop has waited in its selector, summed, and the last moment it found
    nothing ready (set by :class:`IdleTimingEventLoop`)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.active = False
        self.quiet_at: float | None = None

    def waited(self, seconds: float) -> None:
        self.total += seconds
        self.active = True

    def found_nothing(self, start: float, end: float, timeout: float | None) -> None:
        """A select from ``start`` to ``end`` returned nothing ready. Readiness lasts until the
        loop reads, so nothing was ready until the kernel's check, at ``start + timeout`` at
        the earliest; ``end`` can be much later (the thread waited for the GIL or a core)."""
        self.quiet_at = min(end, start + max(0.0, timeout or 0.0))


#: The process's one event loop's idle time.
LOOP_IDLE = LoopIdle()


class _IdleTimingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    def select(self, timeout: float | None = None) -> list:
        start = time.monotonic()
        try:
            ready = super().select(timeout)
        finally:
            end = time.monotonic()
            LOOP_IDLE.waited(end - start)
        if not ready:  # a select that failed says nothing of readiness
            LOOP_IDLE.found_nothing(start, end, timeout)
        return ready


class IdleTimingEventLoop(asyncio.SelectorEventLoop):
    """asyncio's selector event loop, adding up the time it waits for I/O in :data:`LOOP_IDLE`."""

    def __init__(self) -> None:
        super().__init__(_IdleTimingSelector())

    def close(self) -> None:
        super().close()
        LOOP_IDLE.active = False  # a later loop of another kind must not read this one's clock


def loop_busy_seconds() -> float | None:
    """Seconds the event loop's thread has been busy (not waiting for I/O), from an arbitrary
    origin on ``time.monotonic``'s clock; None unless the loop is :class:`IdleTimingEventLoop`."""
    return time.monotonic() - LOOP_IDLE.total if LOOP_IDLE.active else None


#: Held time up to this much still counts as the server's. Part of it is the crawler handling
#: this very fetch, and a slow server keeps working meanwhile: the measures are upper bounds
#: on the crawler's share (leaving all of it out read a server that took 40 ms as taking
#: 39.75, a rest 2.5 ms short under the duration rule). Larger, it reads a busy crawler as a
#: slower server: 10 ms made ``make test``'s crawls a minute slower.
OWN_TIME_ALLOWANCE = 0.005


#: The running :class:`StallMonitor`'s tick lateness (a process has one reactor), or None.
_TICKS: ReactorLag | None = None

HeldMark = tuple[float | None, float | None]


def held_mark() -> HeldMark:
    """How long the reactor's thread has been held so far, by both measures: its busy time
    (:func:`loop_busy_seconds`) and the stall tick's summed lateness; None where unknown."""
    return loop_busy_seconds(), (_TICKS.total if _TICKS is not None else None)


def quiet_at() -> float | None:
    """When (``time.monotonic``) the event loop last found nothing ready; None unless the loop
    is :class:`IdleTimingEventLoop`. Read when an answer's last bytes are read, it is a moment
    they had not yet come: held time before it did not keep them waiting."""
    return LOOP_IDLE.quiet_at if LOOP_IDLE.active else None


def crawler_held(seconds: float, before: HeldMark, after: HeldMark, waited_at_most: float | None = None) -> float:
    """Of a fetch that took ``seconds``, the part the crawler's own thread held it (beyond
    :data:`OWN_TIME_ALLOWANCE`), from :func:`held_mark` before and after: the larger of the
    two measures, since each sees stalls the other misses; 0 unknown.

    Both measures also count work done while the server was still working on the answer.
    ``waited_at_most`` bounds the held time by how long the answer can have waited to be read
    (the time since :func:`quiet_at` at its last bytes): without it a loaded machine read a
    40 ms server as 39.98 ms."""
    held = max((b - a for a, b in zip(before, after) if a is not None and b is not None), default=0.0)
    if waited_at_most is not None:
        held = min(held, waited_at_most)
    return min(seconds, max(0.0, held - OWN_TIME_ALLOWANCE))


class TurnTaker:
    """Gives the reactor a turn once ``turn`` seconds of work have passed since the last one.

    Awaited between pieces of a long job in a coroutine (``await turns.maybe()``), it lets
    due timers (each host's next request) and finished downloads run in between. Measured
    before it: the 17,000 links of a 6 MB page held the reactor 1.2 s, and every host's
    next request waited that long."""

    def __init__(self, turn: float = 0.01) -> None:
        self.turn = turn
        self._since = time.perf_counter()

    async def maybe(self) -> bool:
        """Give the reactor a turn if one is due; whether it had one."""
        if time.perf_counter() - self._since < self.turn:
            return False
        if is_asyncio_available():
            await asyncio.sleep(0)
        else:
            from twisted.internet import reactor

            await task.deferLater(reactor, 0, lambda: None)
        self._since = time.perf_counter()
        return True


class WorkGate:
    """At most ``slots`` coroutines at a time do long work on the reactor's thread; the rest wait.

    :class:`TurnTaker` makes each piece of work give the reactor a turn, but asyncio runs every
    ready coroutine once per turn of its loop: 56 link-farm pages taking 20 ms turns side by
    side held it 1 s a turn. Behind the gate they take their turns one or two at a time.
    :attr:`pending` counts those waiting or working, and :meth:`busy` says when ``backlog``
    of them are (the frontier then hands out nothing, so fetched pages wait on their servers,
    not in memory). Needs asyncio's loop; without it there is no gate."""

    def __init__(self, slots: int, backlog: int = 0, backlog_bytes: int = 0) -> None:
        self.slots, self.backlog, self.backlog_bytes = slots, backlog, backlog_bytes
        self.pending = self.pending_bytes = 0
        self._semaphore: asyncio.Semaphore | None = None

    @asynccontextmanager
    async def turn(self, size: int = 0) -> AsyncIterator[None]:
        """One page's work (a page of ``size`` bytes) behind the gate."""
        self.pending += 1
        self.pending_bytes += size
        try:
            if self.slots and is_asyncio_available():
                if self._semaphore is None:
                    self._semaphore = asyncio.Semaphore(self.slots)
                async with self._semaphore:
                    yield
            else:
                yield
        finally:
            self.pending -= 1
            self.pending_bytes -= size

    def busy(self) -> bool:
        return backlogged(self.pending, self.pending_bytes, self.backlog, self.backlog_bytes)


def backlogged(pages: int, size: int, most_pages: int, most_bytes: int) -> bool:
    """Whether a stage holding ``pages`` pages of ``size`` bytes in all is at its backlog
    (``PAGE_STAGE_BACKLOG`` pages or ``PAGE_STAGE_BACKLOG_BYTES``; 0: no bound). Bytes too: many
    small pages cost little, a few of several megabytes hundreds of MB once parsed."""
    return bool(most_pages and pages >= most_pages) or bool(most_bytes and size >= most_bytes)


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
        global _TICKS
        _TICKS = self.lag
        self.lag.ticked(time.monotonic(), time.process_time())
        self._loop.start(self.tick, now=False)

    def _check(self) -> None:
        longest, own = self.lag.longest, self.lag.longest_own
        late = self.lag.ticked(time.monotonic(), time.process_time())
        if late > longest:
            self.stats.set_value("reactor/max_stall_seconds", round(late, 3))
        if self.lag.longest_own > own:
            self.stats.set_value("reactor/max_stall_own_seconds", round(self.lag.longest_own, 3))
        if late >= self.warn:
            self.stats.inc_value("reactor/stalls")
            logger.warning("the reactor was held %.2f s", late)

    def stop(self) -> None:
        global _TICKS
        if _TICKS is self.lag:
            _TICKS = None
        if self._loop.running:
            self._loop.stop()


class ItemBacklog:
    """While ``ITEM_BACKLOG`` items are in the item pipelines, the frontier hands out nothing
    (an extension answering :data:`crawlproj.signals.fetch_backlog_test`).

    Scrapy holds back fetches only by the bytes of responses in its scraper (5 MB, each counted
    as at least 1 KB), not by items waiting for the pipelines: a host answering thousands of
    small pages (404s, redirects) fast outran the store, and 2,959 items with 56,000 of their
    coroutines and tasks piled up at once; the process kept the memory after they were gone."""

    def __init__(self, crawler: Crawler, backlog: int) -> None:
        self.crawler, self.backlog = crawler, backlog
        self.scraper = None  # the engine's, once the spider is open

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ItemBacklog:
        backlog = crawler.settings.getint("ITEM_BACKLOG")
        if backlog <= 0:
            raise NotConfigured
        ext = cls(crawler, backlog)
        from .. import signals as crawl_signals

        crawler.signals.connect(ext.backlog_test, signal=crawl_signals.fetch_backlog_test)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        return ext

    def spider_opened(self, spider: object) -> None:
        self.scraper = self.crawler.engine.scraper

    def backlog_test(self) -> object:
        return self.busy

    def busy(self) -> bool:
        slot = self.scraper.slot if self.scraper is not None else None
        return slot is not None and slot.itemproc_size >= self.backlog

