"""The refresher: continuous (incremental) crawling from the long-term revisit queue."""

from __future__ import annotations

import heapq
import logging
import time

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from twisted.internet import task

from .. import signals as crawl_signals
from ..changes.watches import WatchList
from ..engine_state import engine_scheduler
from ..store import settings_store
from .pipeline import open_revisit_queue
from .state import CrawlClock

logger = logging.getLogger(__name__)

MODES = ("off", "incremental")


class Refresher:
    """Feeds due revisits to the frontier and keeps an incremental crawl running.

    Active when ``REVISIT_MODE = "incremental"`` (the ``incremental`` profile) or the
    spider was started with ``-a mode=incremental``. Every ``REVISIT_REFRESH_SECONDS``
    it moves URLs due within ``REVISIT_HORIZON`` (crawl-clock seconds, default one
    day) from the long-term queue (SQLite, indexed by due time) into a short-term
    heap in memory, at most ``REVISIT_SHORT_TERM_MAX``, and hands each to the
    engine when it falls due, with ``If-None-Match`` / ``If-Modified-Since`` from
    its last visit. So the frontier only ever holds URLs due now, while discovery
    goes on beside them; how the fetches divide between the two is the revisit
    budget (``REVISIT_BUDGET`` or ``REVISIT_SHARE``, see the revisit pipeline).

    Revisits are not journaled by the frontier: the long-term queue is their
    record. A revisit interrupted by SIGINT or a kill -9 is still due in the
    table (its row moves only when the visit is stored), so the next run sends
    it again. The spider never closes for want of work; SIGINT stops it cleanly.
    """

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        self.mode = s.get("REVISIT_MODE")
        self.clock = CrawlClock(s.getfloat("REVISIT_TIME_SCALE"))
        self.horizon = s.getfloat("REVISIT_HORIZON")
        self.every = s.getfloat("REVISIT_REFRESH_SECONDS")
        self.capacity = s.getint("REVISIT_SHORT_TERM_MAX")
        self.conditional = s.getbool("REVISIT_CONDITIONAL")
        self.in_flight_timeout = s.getfloat("REVISIT_IN_FLIGHT_TIMEOUT")
        self.queue = None
        self.heap: list[tuple[float, str]] = []  # (due, url): the short-term queue
        self.scheduled: dict[str, float] = {}  # url -> its due time in the heap (older heap entries are stale)
        self.in_flight: dict[str, float] = {}  # url -> when it went to the engine (monotonic)
        self.loaded_until = float("-inf")  # rows due up to here have been read into the heap
        self.seen_seq = 0
        self.spider: Spider | None = None
        self.watches = WatchList(settings_store(s), s.getfloat("WATCH_REFRESH_SECONDS"))
        self.watches_sent: set[str] = set()  # watched pages not in the queue yet, already requested
        self._loop: task.LoopingCall | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Refresher:
        return cls(crawler)

    @property
    def active(self) -> bool:
        return self._loop is not None

    def spider_opened(self, spider: Spider) -> None:
        mode = getattr(spider, "mode", None) or self.mode
        if mode not in MODES:
            raise ValueError(f"-a mode={mode!r}: choose one of {', '.join(MODES)}")
        if mode != "incremental":
            return
        self.spider = spider
        self.queue = open_revisit_queue(self.crawler.settings)
        self.seen_seq = 0
        sig = self.crawler.signals
        sig.connect(self.spider_idle, signal=signals.spider_idle)
        sig.connect(self.pages_committed, signal=crawl_signals.pages_committed)
        self._mark_stored_seen()
        self._loop = task.LoopingCall(self.tick)
        self._loop.start(self.every, now=True)
        logger.info("incremental mode: %d URLs in the revisit queue, horizon %.0f s", self.queue.count(),
                    self.horizon)

    def _mark_stored_seen(self) -> None:
        """The pages already stored are the refresher's: each is revisited when it falls due, and
        discovery does not fetch it again meanwhile. A crawl started over a store with a fresh
        frontier (a first incremental run after a local one) had spent its first minutes
        fetching pages it had, as if new."""
        frontier = engine_scheduler(self.crawler)
        mark = getattr(getattr(frontier, "df", None), "mark_seen_key", None)
        urls = getattr(self.queue, "urls", None)
        if mark is None or urls is None:
            return
        marked = 0
        for url in urls():
            mark(url)
            marked += 1
        self.stats.set_value("revisit/stored_marked_seen", marked)

    def spider_closed(self, spider: Spider) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self.queue is not None:
            self.queue.close()

    def spider_idle(self, spider: Spider) -> None:
        raise DontCloseSpider  # continuous: more revisits fall due

    def pages_committed(self, urls: list[str]) -> None:
        for url in urls:
            self.in_flight.pop(url, None)  # its new due time is in the table now

    # -- the short-term queue ------------------------------------------------
    def tick(self) -> None:
        now = self.clock.now()
        frontier = engine_scheduler(self.crawler)
        owned = getattr(getattr(frontier, "frontier", None), "owned", None)
        if owned is not None and hasattr(self.queue, "owned") and owned != self.queue.owned:
            # Distributed: revisit only the host partitions this worker's frontier holds.
            self.queue.owned = list(owned)
            self.loaded_until, self.seen_seq = float("-inf"), 0
        self._expire_in_flight()
        self._fetch_new_watches()
        self._refill(now)
        self._release(now)
        self.stats.set_value("revisit/short_term", len(self.scheduled))
        while self.heap and self.scheduled.get(self.heap[0][1]) != self.heap[0][0]:
            heapq.heappop(self.heap)  # stale: rescheduled since
        # What an endless crawl's progress line says instead of an end time: when the next revisit is due.
        self.stats.set_value("revisit/next_due_in", round(self.clock.to_real(self.heap[0][0] - now), 1)
                             if self.heap else None)
        self.stats.set_value("revisit/in_flight", len(self.in_flight))

    def _push(self, due: float, url: str) -> None:
        if self.scheduled.get(url) == due:
            return
        self.scheduled[url] = due
        heapq.heappush(self.heap, (due, url))

    def _refill(self, now: float) -> None:
        """Rows due within the horizon not read yet, and rows rescheduled into the loaded span."""
        assert self.queue is not None
        seq = self.queue.committed_seq()
        for due, url in self.queue.changed_since(self.seen_seq, self.loaded_until):
            self._push(due, url)
        self.seen_seq = seq
        room = self.capacity - len(self.scheduled)
        if room <= 0:
            return
        rows = self.queue.due(self.loaded_until, now + self.horizon, room)
        for due, url in rows:
            self._push(due, url)
        # A full read covers the whole horizon; a cut one only up to its last row.
        self.loaded_until = rows[-1][0] if len(rows) == room else now + self.horizon

    def _release(self, now: float) -> None:
        assert self.queue is not None and self.spider is not None
        engine = self.crawler.engine
        while self.heap and self.heap[0][0] <= now:
            due, url = heapq.heappop(self.heap)
            if self.scheduled.get(url) != due:
                continue  # rescheduled: a newer entry stands
            del self.scheduled[url]
            if url in self.in_flight:
                continue
            state = self.queue.get(url)
            if state is None or state.next_due > now:
                continue  # gone, or moved later (it comes back through changed_since)
            headers = state.conditional_headers if self.conditional else {}
            # How late, in intervals: the frontier ranks revisits by it (freshness-due ordering).
            overdue = (now - state.next_due) / state.interval if state.interval > 0 else 0.0
            # A feed goes first (the top level): its entries' dates make its host's changed pages due.
            request = self.spider.request(url, dont_filter=True, headers=headers, priority=int(state.kind == "feed"),
                                          meta={"revisit": True, "depth": state.depth, "revisit_overdue": overdue})
            self.in_flight[url] = time.monotonic()
            engine.crawl(request)
            self.stats.inc_value("revisit/requests")
            if headers:
                self.stats.inc_value("revisit/conditional_requests")
            self.stats.set_value("revisit/lateness", round(self.clock.to_real(now - due), 3))

    def _fetch_new_watches(self) -> None:
        """A watched page the queue does not hold yet is fetched now; its visit puts it in the queue."""
        assert self.queue is not None and self.spider is not None
        for url in self.watches.all():
            if url in self.watches_sent or url in self.in_flight or self.queue.get(url) is not None:
                continue
            self.watches_sent.add(url)
            self.crawler.engine.crawl(self.spider.request(url, dont_filter=True, meta={"depth": 0}))
            self.stats.inc_value("revisit/watches_fetched")

    def _expire_in_flight(self) -> None:
        """A revisit the crawl lost (dropped by a middleware) is sent again after a while."""
        limit = time.monotonic() - self.in_flight_timeout
        for url in [u for u, at in self.in_flight.items() if at < limit]:
            del self.in_flight[url]
            self._push(self.clock.now(), url)
            self.stats.inc_value("revisit/in_flight_expired")
