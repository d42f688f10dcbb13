"""What a finished fetch tells the politeness policy: a window sample and a server back-off.

:class:`FeedbackMiddleware` sits next to the download handler, so it sees the
raw outcome (the 503, the dropped connection) before Scrapy's retry and
redirect middlewares turn it into a new request. It announces it with
:data:`crawlproj.signals.fetch_observed`; the frontier turns that into the
host's Waseda window sample and back-off. Parsing ``Retry-After`` is pure.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Collection
from typing import Any

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    ResponseDataLossError,
)
from scrapy.http import Response
from twisted.internet import error as net
from twisted.web._newclient import ResponseFailed, ResponseNeverReceived

from ..signals import fetch_observed

#: Line errors in the Waseda sense: timeouts, refused or dropped connections,
#: send/receive failures. DNS failures are not the server's line and do not count.
LINE_ERRORS = (
    DownloadTimeoutError, DownloadConnectionRefusedError, DownloadFailedError, ResponseDataLossError,
    net.TimeoutError, net.TCPTimedOutError, net.ConnectionLost, net.ConnectionDone, net.ConnectError,
    ResponseFailed, ResponseNeverReceived,
)


def sample(result: Any, seconds: float, min_bytes: int = 0) -> tuple[int, float, bool] | None:
    """(bytes, seconds, line error) of a fetch (a response or an exception), or None
    when it says nothing about the line. A response smaller than ``min_bytes`` says
    nothing about line speed: its time is latency, not transfer."""
    if isinstance(result, Response):
        if len(result.body) < min_bytes or "playwright" in result.flags:
            return None  # a rendered DOM's size and time are the browser's, not the line's
        return len(result.body), seconds, False
    if isinstance(result, LINE_ERRORS):
        return 0, seconds, True
    return None


def failure_kind(result: Any) -> str | None:
    """How a fetch failed at the host (dns, timeout, connection, http_5xx), or None."""
    if isinstance(result, Response):
        return "http_5xx" if result.status >= 500 else None
    if isinstance(result, (CannotResolveHostError, net.DNSLookupError)):
        return "dns"
    if isinstance(result, (DownloadTimeoutError, net.TimeoutError, net.TCPTimedOutError)):
        return "timeout"
    if isinstance(result, LINE_ERRORS):
        return "connection"
    return None


def closed_keepalive(result: Any) -> bool:
    """The server closed the connection after this response (``Connection: close``, made
    visible by :class:`~crawlproj.politeness.keepalive.KeepAliveAwareDownloadHandler`)."""
    if not isinstance(result, Response):
        return False
    return b"close" in (result.headers.get(b"Connection") or b"").lower()


def retry_after_seconds(value: str | bytes | None, now: float) -> float | None:
    """A Retry-After header as seconds from ``now`` (epoch seconds); None if absent or unreadable."""
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


def backoff_seconds(result: Any, statuses: Collection[int], default: float, maximum: float,
                    now: float) -> float | None:
    """How long the host must rest after ``result``: set by a 429/503-like status, else None."""
    if not isinstance(result, Response) or result.status not in statuses:
        return None
    seconds = retry_after_seconds(result.headers.get(b"Retry-After"), now)
    return min(default if seconds is None else seconds, maximum)


class FeedbackMiddleware:
    """Announces each raw download outcome (response or exception) to the frontier.

    Keep it at the highest order in ``DOWNLOADER_MIDDLEWARES`` (closest to the
    download handler); it changes nothing it sees.
    """

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self._started: dict[int, float] = {}  # id(request) -> when the handler got it

    @classmethod
    def from_crawler(cls, crawler: Any) -> FeedbackMiddleware:
        return cls(crawler)

    def process_request(self, request: Any, spider: Any = None) -> None:
        self._started[id(request)] = time.monotonic()
        return None

    def _observed(self, request: Any, result: Any) -> None:
        started = self._started.pop(id(request), None)
        seconds = time.monotonic() - started if started is not None else None
        # A render's time is mostly the browser's; the server's is its longest sub-request.
        seconds = request.meta.get("render_server_seconds", seconds)
        self.crawler.signals.send_catch_log(fetch_observed, request=request, result=result, seconds=seconds)

    def process_response(self, request: Any, response: Response, spider: Any = None) -> Response:
        self._observed(request, response)
        return response

    def process_exception(self, request: Any, exception: Exception, spider: Any = None) -> None:
        self._observed(request, exception)
        return None
