"""Keep-alive: let the crawler see when a server closes a persistent connection; and a
bound on response headers.

Scrapy's HTTP/1.1 handler already reuses connections per host. But Twisted's
HTTP client keeps the ``Connection`` response header to itself (it is a
connection-control header), so nothing above the handler can tell that a
server closed keep-alive. :class:`KeepAliveAwareDownloadHandler` copies that
header into the response headers; the frontier then rests the host for
``KEEPALIVE_CLOSE_PAUSE`` (the Waseda crawler: crawl on while keep-alive holds, pause
when the server closes it).

Idle connections are bounded over all hosts (:class:`BoundedConnectionPool`): a broad crawl
leaves a host every few milliseconds, and Twisted's pool keeps each one's connection for its
timeout and an entry for every host it ever connected to.

Response headers are bounded too: ``DOWNLOAD_MAXSIZE`` counts bodies only, and a server
sending header lines without end grew the crawler by 340 MB a second. Past
``DOWNLOAD_MAX_HEADERS`` lines or ``DOWNLOAD_MAX_HEADER_BYTES`` bytes the connection is
dropped and the fetch fails as ``too_large`` (:class:`HeadersTooLarge`).

This builds on private classes of Scrapy 2.19's ``http11`` handler, the same
way Scrapy's own lenient protocol does; the tests pin the behaviour.
"""

from __future__ import annotations

import resource
from typing import Any, Hashable

from scrapy.core.downloader.handlers.http11 import (
    HTTP11DownloadHandler,
    _LenientHTTP11ClientFactory,
    _LenientHTTP11ClientProtocol,
    _LenientHTTPClientParser,
)
from twisted.web._newclient import HEADER
from twisted.web.client import HTTPConnectionPool

from ..errors import HeadersTooLarge


class _BoundedHeadersParser(_LenientHTTPClientParser):
    """Scrapy's lenient parser, counting header lines and bytes (the class is swapped in as
    Scrapy swaps its own, and the limits and counts set on the instance by :meth:`bound`)."""

    def bound(self, max_headers: int, max_header_bytes: int) -> None:
        self.max_headers, self.max_header_bytes = max_headers, max_header_bytes
        self.header_lines = self.header_bytes = 0

    def lineReceived(self, line: bytes) -> None:
        if self.state == HEADER:
            self.header_lines += 1
            self.header_bytes += len(line) + 2
            if ((self.max_headers and self.header_lines > self.max_headers)
                    or (self.max_header_bytes and self.header_bytes > self.max_header_bytes)):
                # Raised into the protocol's dataReceived, which drops the connection and fails the request.
                raise HeadersTooLarge(f"response headers exceeded the limits ({self.header_lines} lines, "
                                      f"{self.header_bytes} bytes; DOWNLOAD_MAX_HEADERS, DOWNLOAD_MAX_HEADER_BYTES)")
        super().lineReceived(line)


class _ConnectionHeaderProtocol(_LenientHTTP11ClientProtocol):
    limits = (0, 0)  # (lines, bytes): set on the factory's subclass per handler

    def request(self, request: Any) -> Any:
        d = super().request(request)
        parser = self._parser
        if parser is not None:
            parser.__class__ = _BoundedHeadersParser
            parser.bound(*self.limits)

        def expose(response: Any) -> Any:
            values = parser.connHeaders.getRawHeaders(b"Connection") if parser is not None else None
            if values:
                response.headers.setRawHeaders(b"Connection", values)
            return response

        return d.addCallback(expose)


class _ConnectionHeaderFactory(_LenientHTTP11ClientFactory):
    limits = (0, 0)

    def buildProtocol(self, addr: Any) -> _ConnectionHeaderProtocol:
        protocol = _ConnectionHeaderProtocol(self._quiescentCallback)
        protocol.limits = self.limits
        return protocol


class BoundedConnectionPool(HTTPConnectionPool):
    """Twisted's connection pool, keeping at most ``max_idle`` idle connections over all hosts
    (the longest idle closed first) and no entry for a host without one.

    Twisted's own keeps one idle connection a host for its timeout, however many hosts: a broad
    crawl of 2 workers meeting about 100 new hosts a second held some 10,000 each and exhausted
    the server's file descriptors (20,000) in 15 minutes; and its map from host to idle
    connections kept an empty list for every host ever met (about 200 bytes a host)."""

    max_idle = 0  # 0: no cap

    def _putConnection(self, key: Hashable, connection: Any) -> None:
        super()._putConnection(key, connection)
        # _timeouts holds one call per idle connection, oldest first (dicts keep insertion order)
        while self.max_idle and len(self._timeouts) > self.max_idle:
            call = next(iter(self._timeouts.values()))
            idle_key, idle = call.args  # (read before cancel() drops them)
            call.cancel()
            self._removeConnection(idle_key, idle)

    def _removeConnection(self, key: Hashable, connection: Any) -> None:
        super()._removeConnection(key, connection)
        if not self._connections[key]:
            del self._connections[key]

    def getConnection(self, key: Hashable, endpoint: Any) -> Any:
        d = super().getConnection(key, endpoint)
        if key in self._connections and not self._connections[key]:
            del self._connections[key]
        return d


def max_idle_connections(setting: int) -> int:
    """``KEEPALIVE_MAX_IDLE``, and at most a quarter of the process's file descriptors (a soft
    limit of 1,024 is common): the rest are for connections in use, files and the browser."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return setting
    return min(setting, soft // 4) if setting else soft // 4


def expose_connection_header(handler: HTTP11DownloadHandler, settings: Any) -> None:
    """Make an HTTP/1.1 handler (or a subclass, such as the rendering one) put the server's
    ``Connection`` header on its responses, bound response headers (``DOWNLOAD_MAX_HEADERS``,
    ``DOWNLOAD_MAX_HEADER_BYTES``) and idle connections' life (``KEEPALIVE_IDLE_SECONDS``) and
    number (``KEEPALIVE_MAX_IDLE``)."""
    limits = (settings.getint("DOWNLOAD_MAX_HEADERS"), settings.getint("DOWNLOAD_MAX_HEADER_BYTES"))
    handler._pool._factory = type("BoundedConnectionHeaderFactory", (_ConnectionHeaderFactory,), {"limits": limits})
    # An idle connection costs some 7 KB of the crawler's memory (its protocol, transport and
    # timer) and a file descriptor: Twisted keeps one 240 s, which a broad crawl meeting 20 new
    # hosts a second paid for 4,800 connections to hosts it had left.
    handler._pool.cachedConnectionTimeout = settings.getfloat("KEEPALIVE_IDLE_SECONDS")
    handler._pool.__class__ = BoundedConnectionPool  # the handler built it; swapped as Scrapy swaps parsers
    handler._pool.max_idle = max_idle_connections(settings.getint("KEEPALIVE_MAX_IDLE"))


class KeepAliveAwareDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler, whose responses carry the server's ``Connection`` header."""

    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        expose_connection_header(self, crawler.settings)
