"""Keep-alive: let the crawler see when a server closes a persistent connection; and a
bound on response headers.

Scrapy's HTTP/1.1 handler already reuses connections per host. But Twisted's
HTTP client keeps the ``Connection`` response header to itself (it is a
connection-control header), so nothing above the handler can tell that a
server closed keep-alive. :class:`KeepAliveAwareDownloadHandler` copies that
header into the response headers; the frontier then rests the host for
``KEEPALIVE_CLOSE_PAUSE`` (the Waseda crawler: crawl on while keep-alive holds, pause
when the server closes it).

Response headers are bounded too: ``DOWNLOAD_MAXSIZE`` counts bodies only, and a server
sending header lines without end grew the crawler by 340 MB a second. Past
``DOWNLOAD_MAX_HEADERS`` lines or ``DOWNLOAD_MAX_HEADER_BYTES`` bytes the connection is
dropped and the fetch fails as ``too_large`` (:class:`HeadersTooLarge`).

This builds on private classes of Scrapy 2.19's ``http11`` handler, the same
way Scrapy's own lenient protocol does; the tests pin the behaviour.
"""

from __future__ import annotations

from typing import Any

from scrapy.core.downloader.handlers.http11 import (
    HTTP11DownloadHandler,
    _LenientHTTP11ClientFactory,
    _LenientHTTP11ClientProtocol,
    _LenientHTTPClientParser,
)
from twisted.web._newclient import HEADER
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


def expose_connection_header(handler: HTTP11DownloadHandler, settings: Any) -> None:
    """Make an HTTP/1.1 handler (or a subclass, such as the rendering one) put the server's
    ``Connection`` header on its responses, bound response headers (``DOWNLOAD_MAX_HEADERS``,
    ``DOWNLOAD_MAX_HEADER_BYTES``) and idle connections' life (``KEEPALIVE_IDLE_SECONDS``)."""
    limits = (settings.getint("DOWNLOAD_MAX_HEADERS"), settings.getint("DOWNLOAD_MAX_HEADER_BYTES"))
    handler._pool._factory = type("BoundedConnectionHeaderFactory", (_ConnectionHeaderFactory,), {"limits": limits})
    # An idle connection costs some 7 KB of the crawler's memory (its protocol, transport and
    # timer) and a file descriptor: Twisted keeps one 240 s, which a broad crawl meeting 20 new
    # hosts a second paid for 4,800 connections to hosts it had left.
    handler._pool.cachedConnectionTimeout = settings.getfloat("KEEPALIVE_IDLE_SECONDS")


class KeepAliveAwareDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler, whose responses carry the server's ``Connection`` header."""

    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        expose_connection_header(self, crawler.settings)
