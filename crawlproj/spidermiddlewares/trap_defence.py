"""Trap defences on a page's links (a spider middleware): the rules of :mod:`crawlproj.traps`,
applied to every link before it reaches the frontier; each drop counted as ``traps/<defence>``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.crawler import Crawler

from ..traps import compile_patterns, is_dynamic, query_params, repeated_segments


class TrapDefenceMiddleware:
    """Drops links that lead into traps (a spider middleware)."""

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.stats = crawler.stats
        self.patterns = compile_patterns(s.getlist("DYNAMIC_URL_PATTERNS"))
        self.cgi_hop_limit = s.getint("CGI_HOP_LIMIT")
        self.max_repeats = s.getint("MAX_REPEATED_SEGMENTS")
        self.max_params = s.getint("QUERY_MAX_PARAMS")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TrapDefenceMiddleware:
        return cls(crawler)

    def refusal(self, request: Request, cgi_hops: int) -> str | None:
        """Why ``request`` must not be followed, or None."""
        if self.cgi_hop_limit and cgi_hops > self.cgi_hop_limit:
            return "cgi_hop_limit"
        if self.max_repeats and repeated_segments(urlsplit(request.url).path) >= self.max_repeats:
            return "repeated_segments"
        if self.max_params and query_params(request.url) > self.max_params:
            return "query_params"
        return None

    async def process_spider_output(self, response: Any, result: AsyncIterator[Any], spider: Any = None):
        source_dynamic = is_dynamic(response.url, self.patterns)
        hops = response.meta.get("cgi_hops", 0) + 1 if source_dynamic else 0
        async for item in result:
            if isinstance(item, Request):
                reason = self.refusal(item, hops)
                if reason:
                    self.stats.inc_value(f"traps/{reason}")
                    continue
                item.meta["cgi_hops"] = hops
            yield item
