"""What a finished fetch tells the politeness policy (pure): a Waseda window sample, how it
failed, whether the server closed keep-alive, and a server's back-off (``Retry-After``).
:class:`~crawlproj.downloadermiddlewares.waseda_interval.WasedaIntervalMiddleware` reads them off each raw outcome."""

from __future__ import annotations

import email.utils
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
    """A Retry-After header as seconds from ``now`` (epoch seconds); None if absent or unreadable
    (the caller then rests the host ``BACKOFF_DEFAULT``). Seconds are ASCII digits only (RFC 9110:
    ``str.isdigit`` also takes "²" and full-width digits, which ``float`` then refuses)."""
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    if text.isascii() and text.isdigit():
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
