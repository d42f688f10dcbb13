"""What a finished fetch does to the frontier: its key is released, rested or held back.

The Waseda middleware (:mod:`crawlproj.downloadermiddlewares.waseda_interval`) judges each fetch in the
crawl's :class:`~crawlproj.politeness.hosts.HostPoliteness` and sends its verdict
(:data:`crawlproj.signals.host_rest`); this applies it to the frontier when the fetch
finishes (:data:`crawlproj.signals.fetch_finished`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.utils.httpobj import urlparse_cached

from .. import signals as crawl_signals
from ..politeness import feedback
from ..politeness.hosts import FetchVerdict, Hold, HostPoliteness
from ..politeness.keys import PolitenessKeys
from .protocol import Frontier

logger = logging.getLogger(__name__)


class FetchOutcomes:
    """The requests the scheduler handed out, until each finishes.

    Promises: a key handed out is released exactly once per request, at the time its
    verdict says (or, with no Waseda middleware, by the whole time since the request
    reached the downloader); a request that never reached the network owes only the
    rest its robots.txt fetch needs; holds (parked, suspended, keep-alive pause) defer
    the key beyond that; afterwards the engine is woken at the frontier's next due time.

    A verdict is applied when it comes, as the download ends, not when the request leaves
    the downloader's middlewares: a page parsed in a page thread there waits its turn behind
    others, and an 8 MB page's 1.3 s held every host's next request (3.6% of a polite
    crawl's bound).
    """

    def __init__(self, crawler: Crawler, frontier: Frontier, hosts: HostPoliteness, keys: PolitenessKeys,
                 clock: Callable[[], float], wake_at: Callable[[float | None], None]) -> None:
        self.crawler, self.stats = crawler, crawler.stats
        self.frontier, self.hosts, self.keys = frontier, hosts, keys
        self.clock, self.wake_at = clock, wake_at
        self._handed: dict[int, str] = {}  # id(request) -> its key
        self._reached: dict[int, float] = {}  # id(request) -> when it reached the downloader
        sig = crawler.signals
        sig.connect(self.fetch_finished, signal=crawl_signals.fetch_finished)
        sig.connect(self.reached_downloader, signal=signals.request_reached_downloader)
        sig.connect(self.host_rest, signal=crawl_signals.host_rest)
        sig.connect(self.fetch_observed, signal=crawl_signals.fetch_observed)
        sig.connect(self.robots_fetched, signal=crawl_signals.robots_fetched)
        sig.connect(self.side_fetched, signal=crawl_signals.side_fetched)

    def handed(self, request: Request, key: str) -> None:
        request.meta["politeness_key"] = key  # the Waseda middleware records the fetch under it
        self._handed[id(request)] = key

    def reached_downloader(self, request: Request, spider: Spider | None = None) -> None:
        if id(request) in self._handed:
            self._reached[id(request)] = self.clock()

    def host_rest(self, request: Request, verdict: FetchVerdict) -> None:
        key = self._handed.pop(id(request), None)
        if key is not None:
            self._reached.pop(id(request), None)
            self._apply(request, key, verdict)

    def fetch_finished(self, request: Request, result: Any) -> None:
        key = self._handed.pop(id(request), None)
        if key is None:
            return  # its verdict came as the download ended, or not ours (robots.txt fetched from inside a middleware)
        now = self.clock()
        reached = self._reached.pop(id(request), None)
        if reached is None:
            # Never reached the network (robots.txt said no, or the robots.txt fetch
            # took this visit and sent the request back): only that fetch needs rest, and
            # without it the server's per-IP rate slot is given back (nothing reached it).
            refund = not self.hosts.robots_fetched_for(key)
            self.frontier.release(key, self.hosts.unfetched(key, self.frontier.next_allowed.get(key, now)), refund=refund)
            if refund:
                self.stats.inc_value("frontier/refused_before_connecting")
            self.wake_at(self.frontier.next_due())
        else:  # no WasedaIntervalMiddleware: the whole time since it reached the downloader
            self._apply(request, key, self.hosts.fetched(key, result, now - reached, now, now, time.time()))

    def _apply(self, request: Request, key: str, verdict: FetchVerdict) -> None:
        self.stats.inc_value(f"frontier/interval_rule/{verdict.interval.rule}")
        if verdict.backoff:
            self.stats.inc_value("frontier/backoffs")
        self.frontier.release(key, verdict.release_at)
        if verdict.failure is not None:
            self.stats.inc_value(f"frontier/fetch_failures/{verdict.failure}")
            self.crawler.signals.send_catch_log(crawl_signals.host_error,
                                                host=urlparse_cached(request).hostname or "", kind=verdict.failure)
        for hold in verdict.holds:
            self.hold(key, hold)
        self.wake_at(self.frontier.next_due())

    def fetch_observed(self, request: Request, result: Any) -> None:
        """robots.txt, fetched from inside a middleware: its closed connection counts too."""
        if feedback.closed_keepalive(result):
            key = self.keys.key_of(urlparse_cached(request).hostname or "")
            hold = self.hosts.keepalive_closed(key, self.clock())
            if hold is not None:
                self.hold(key, hold)

    def robots_fetched(self, host: str, status: int | None, crawl_delay: float | None = None,
                       duration: float | None = None) -> None:
        self.hosts.robots_fetched(self.keys.key_of(host or ""), crawl_delay, duration, self.clock())

    def side_fetched(self, host: str, duration: float | None = None) -> None:
        """tdmrep.json, fetched from inside a middleware: the host rests after it as after robots.txt."""
        self.hosts.robots_fetched(self.keys.key_of(host or ""), None, duration, self.clock())

    def hold(self, key: str, hold: Hold) -> None:
        """Keep ``key`` back beyond its interval, and count why."""
        self.frontier.defer(key, hold.until)
        self.stats.inc_value(hold.stat)
        if hold.rule == "parked":
            logger.warning("host %s parked for %.0f s after %d failures in a row", key, hold.until - self.clock(),
                           self.hosts.park_after)
