"""Keep-alive: let the crawler see when a server closes a persistent connection.

Scrapy's HTTP/1.1 handler already reuses connections per host. But Twisted's
HTTP client keeps the ``Connection`` response header to itself (it is a
connection-control header), so nothing above the handler can tell that a
server closed keep-alive. :class:`KeepAliveAwareDownloadHandler` copies that
header into the response headers; the frontier then rests the host for
``KEEPALIVE_CLOSE_PAUSE`` (seed 004: crawl on while keep-alive holds, pause
when the server closes it).

This builds on private classes of Scrapy 2.19's ``http11`` handler, the same
way Scrapy's own lenient protocol does; the tests pin the behaviour.
"""

from __future__ import annotations

from typing import Any

from scrapy.core.downloader.handlers.http11 import (
    HTTP11DownloadHandler,
    _LenientHTTP11ClientFactory,
    _LenientHTTP11ClientProtocol,
)


class _ConnectionHeaderProtocol(_LenientHTTP11ClientProtocol):
    def request(self, request: Any) -> Any:
        d = super().request(request)
        parser = self._parser

        def expose(response: Any) -> Any:
            values = parser.connHeaders.getRawHeaders(b"Connection") if parser is not None else None
            if values:
                response.headers.setRawHeaders(b"Connection", values)
            return response

        return d.addCallback(expose)


class _ConnectionHeaderFactory(_LenientHTTP11ClientFactory):
    def buildProtocol(self, addr: Any) -> _ConnectionHeaderProtocol:
        return _ConnectionHeaderProtocol(self._quiescentCallback)


def expose_connection_header(handler: HTTP11DownloadHandler) -> None:
    """Make an HTTP/1.1 handler (or a subclass, such as the rendering one) put the server's
    ``Connection`` header on its responses."""
    handler._pool._factory = _ConnectionHeaderFactory


class KeepAliveAwareDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler, whose responses carry the server's ``Connection`` header."""

    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        expose_connection_header(self)
