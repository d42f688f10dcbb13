"""A body's own charset over a contradicting header (a downloader middleware); the rules are
:mod:`crawlproj.content.charset`."""

from __future__ import annotations

from typing import Any

from scrapy.http import Response, TextResponse
from w3lib.encoding import http_content_type_encoding

from ..content.charset import body_charset_over_header, readable_charset
from ..content.extract import is_html


class BodyCharsetMiddleware:
    """Re-reads an HTML response in its body's own charset when the header contradicts it
    (counted as ``charset/body_over_header``)."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Any) -> BodyCharsetMiddleware:
        return cls(crawler.stats)

    def process_response(self, request: Any, response: Response, spider: Any = None) -> Response:
        if not isinstance(response, TextResponse):
            return response
        content_type = response.headers.get(b"Content-Type")
        header_charset = http_content_type_encoding(content_type.decode("latin-1")) if content_type else None
        readable = readable_charset(response.body, header_charset)
        if readable is not None:  # a declared "charset" no text can be read in
            self.stats.inc_value("charset/unusable")
            return response.replace(encoding=readable)
        if not content_type or not is_html(content_type):
            return response
        own = body_charset_over_header(response.body, header_charset)
        if own is None:
            return response
        self.stats.inc_value("charset/body_over_header")
        return response.replace(encoding=own)
