"""The crawl process's memory, watched while it runs (an extension over pure bookkeeping).

A crawler is judged over days: a few hundred bytes kept per page is gigabytes after a
million pages. :class:`MemoryWatch` reads the process's resident set every
``MEMORY_SAMPLE_INTERVAL`` seconds and puts it beside the pages stored, so an operator
sees growth while it happens (the stats file, ``/metrics``, the dashboard):

* ``process/rss_bytes``: the resident set now;
* ``process/rss_growth_per_1000_pages``: bytes gained per 1,000 pages stored after the first
  ``MEMORY_WARMUP_PAGES`` (a least-squares slope over the samples since; caches and the
  frontier fill during warm-up);
* ``process/rss_bytes_at_pages/<n>``: the resident set when the pages stored first reached
  ``n``, for ``n`` of ``MEMORY_WARMUP_PAGES`` times 1, 2, 3, 4, then 1-2-5 steps (10, 20, 50,
  100, ...): a few keys however long the crawl.

Freed memory does not always leave the process: glibc keeps freed pages in its arenas,
and a parser's many small allocations fragment them (holding 600 real pages' lexbor
trees and freeing them grew a process by 100 MB a round, with nothing live). So each
sample also hands free pages back (``malloc_trim``, ``MEMORY_TRIM``), which takes about
a millisecond on a heap of a few hundred MB.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet import task

logger = logging.getLogger(__name__)

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def rss_bytes(pid: int | str = "self") -> int:
    """Resident set size of a process (0 when it is gone or unreadable)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE_BYTES
    except (OSError, IndexError, ValueError):
        return 0


def pss_bytes(pid: int) -> int:
    """Proportional set size: a process's resident pages, those it shares divided among their
    sharers, so a process tree's sum counts shared pages once (0 when gone or unreadable)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of y on x (None with fewer than two distinct x)."""
    if len(points) < 2:
        return None
    n = len(points)
    mean_x, mean_y = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else None


def milestones(first: int):  # noqa: ANN201 - an endless iterator of ints
    """Page counts at which the resident set is recorded: ``first`` times 1, 2, 3, 4, 10, 20,
    50, 100, 200, 500, ... (the early steps show warm-up, the later ones growth)."""
    for factor in (1, 2, 3, 4):
        yield first * factor
    scale = 10
    while True:
        for factor in (1, 2, 5):
            yield first * factor * scale
        scale *= 10


class RssTrack:
    """Samples of (pages stored, resident bytes): the milestones passed and the growth per
    1,000 pages after warm-up. Keeps at most ``keep`` samples (every other one is dropped
    when full, so the slope still spans the whole crawl). Pure logic."""

    def __init__(self, warmup_pages: int = 500, keep: int = 512) -> None:
        self.warmup_pages = max(1, warmup_pages)
        self.keep = max(4, keep)
        self.samples: list[tuple[int, int]] = []  # after warm-up only
        self.at_pages: dict[int, int] = {}
        self._next = milestones(self.warmup_pages)
        self._due = next(self._next)
        self.last = 0

    def add(self, pages: int, rss: int) -> None:
        self.last = rss
        while pages >= self._due:
            self.at_pages[self._due] = rss
            self._due = next(self._next)
        if pages >= self.warmup_pages:
            if self.samples and self.samples[-1][0] == pages:
                self.samples[-1] = (pages, rss)
            else:
                self.samples.append((pages, rss))
            if len(self.samples) > self.keep:
                self.samples = self.samples[::2] + ([self.samples[-1]] if len(self.samples) % 2 == 0 else [])

    def growth_per_1000_pages(self) -> float | None:
        """Least-squares slope of resident bytes on pages, times 1,000 (None before two samples)."""
        per_page = slope(self.samples)
        return None if per_page is None else 1000 * per_page


def trim_heap() -> bool:
    """Ask glibc to return free heap pages to the system; False where there is no glibc."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(_libc().malloc_trim(0))
    except (OSError, AttributeError):
        return False


_LIBC = None


def _libc():  # noqa: ANN202 - a ctypes library
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL("libc.so.6")
    return _LIBC


class MemoryWatch:
    """Puts the process's resident set beside the pages stored in the stats every
    ``MEMORY_SAMPLE_INTERVAL`` seconds (0: off), and trims the heap then (``MEMORY_TRIM``)."""

    def __init__(self, crawler: Crawler, interval: float, warmup_pages: int, trim: bool) -> None:
        self.stats = crawler.stats
        self.interval = interval
        self.trim = trim
        self.track = RssTrack(warmup_pages)
        self._loop = task.LoopingCall(self.sample)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MemoryWatch:
        s = crawler.settings
        interval = s.getfloat("MEMORY_SAMPLE_INTERVAL")
        if interval <= 0:
            raise NotConfigured
        ext = cls(crawler, interval, s.getint("MEMORY_WARMUP_PAGES"), s.getbool("MEMORY_TRIM"))
        crawler.signals.connect(ext.start, signal=signals.engine_started)
        crawler.signals.connect(ext.stop, signal=signals.spider_closed)
        return ext

    def start(self) -> None:
        self._loop.start(self.interval, now=True)

    def stop(self) -> None:
        if self._loop.running:
            self._loop.stop()
        self.sample()

    def sample(self) -> None:
        if self.trim:
            trim_heap()
        track = self.track
        track.add(self.stats.get_value("item_scraped_count", 0), rss_bytes())
        self.stats.set_value("process/rss_bytes", track.last)
        self.stats.max_value("process/rss_max_bytes", track.last)
        for pages, rss in track.at_pages.items():
            self.stats.set_value(f"process/rss_bytes_at_pages/{pages}", rss)
        growth = track.growth_per_1000_pages()
        if growth is not None:
            self.stats.set_value("process/rss_growth_per_1000_pages", round(growth))
