"""The Waseda dynamic interval, applied by a downloader middleware (the Waseda crawler; the design card).

:class:`WasedaIntervalMiddleware` sits next to the download handler, so it sees each raw
outcome (the 503, the dropped connection) before Scrapy's retry and redirect middlewares
turn it into a new request. It owns each politeness key's inputs to the interval rules
(:class:`~crawlproj.politeness.hosts.HostPoliteness`: the Waseda window of the key's last
fetches, its failures in a row, its continuous session), records every fetch in them,
works out the key's rest (:class:`~crawlproj.politeness.hosts.FetchVerdict`) and hands it
to the frontier with :data:`crawlproj.signals.host_rest`. The frontier enforces it: only
the frontier can rest a host without holding one of Scrapy's download slots.

A fetch's duration is the server's share of it: the time the crawler's own thread was
held meanwhile (busy, measured by :class:`~crawlproj.extensions.stalls.IdleTimingEventLoop`, or
stalled, measured by the stall tick), beyond a few milliseconds, is left out, so a busy
crawler is not read as a slow server; but no more than the answer's last bytes can have
waited to be read: the loop found nothing ready (:func:`~crawlproj.extensions.stalls.quiet_at`)
before they came, and what it did before then did not delay them.
"""

from __future__ import annotations

import time
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from ..politeness.hosts import host_politeness
from ..signals import fetch_observed, host_rest
from ..extensions.stalls import HeldMark, crawler_held, held_mark, quiet_at


class WasedaIntervalMiddleware:
    """Records each fetch in its key's politeness state and hands the key's rest to the frontier.

    Keep it at the highest order in ``DOWNLOADER_MIDDLEWARES`` (closest to the download
    handler); it changes nothing it sees. Requests the frontier handed out carry their
    key (``request.meta["politeness_key"]``); for others (robots.txt, fetched from inside
    a middleware) it announces the raw outcome (:data:`crawlproj.signals.fetch_observed`).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.hosts = host_politeness(crawler)
        self._started: dict[int, tuple[float, HeldMark]] = {}  # id(request) -> (when, the held mark then)
        # id(request) -> (when its latest bytes were read, quiet_at() then)
        self._read: dict[int, tuple[float, float | None]] = {}
        crawler.signals.connect(self._bytes_read, signal=signals.headers_received)
        crawler.signals.connect(self._bytes_read, signal=signals.bytes_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WasedaIntervalMiddleware:
        return cls(crawler)

    def process_request(self, request: Any, spider: Any = None) -> None:
        self._started[id(request)] = (time.monotonic(), held_mark())
        return None

    def _bytes_read(self, request: Any, **_: Any) -> None:
        if id(request) in self._started:
            self._read[id(request)] = (time.monotonic(), quiet_at())

    def process_response(self, request: Any, response: Response, spider: Any = None) -> Response:
        self._observed(request, response)
        return response

    def process_exception(self, request: Any, exception: Exception, spider: Any = None) -> None:
        self._observed(request, exception)
        return None

    def _observed(self, request: Any, result: Any) -> None:
        started = self._started.pop(id(request), None)
        read, quiet = self._read.pop(id(request), (None, None))
        if started is None:
            return  # refused before it reached the handler (robots.txt, address safety): no fetch
        key = request.meta.get("politeness_key")
        if key is None:
            self.crawler.signals.send_catch_log(fetch_observed, request=request, result=result)
            return
        now = time.monotonic()
        seconds = now - started[0]
        # The crawler's own time, not the server's (beyond a small allowance).
        held = crawler_held(seconds, started[1], held_mark(), None if quiet is None else now - quiet)
        if held > 0:
            self.stats.inc_value("politeness/busy_discounted_seconds", round(held, 3))
            seconds -= held
        # A render's time is mostly the browser's; the server's is its longest sub-request, and
        # the server has been idle since its last one ended (the settle and the page's close).
        seconds = request.meta.get("render_server_seconds", seconds)
        # The rest runs from the answer's last bytes read (the server was done before then),
        # not from now: the response's way here (a busy reactor's turns) is not the server's.
        ended = request.meta.get("render_server_done") or (read if isinstance(result, Response) else None) or now
        verdict = self.hosts.fetched(key, result, seconds, ended, now, time.time())
        self.crawler.signals.send_catch_log(host_rest, request=request, verdict=verdict)
