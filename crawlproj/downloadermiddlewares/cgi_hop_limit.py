"""The CGI hop limit in the downloader: for requests that were never a page's links (redirects,
sitemaps, seeds); the rule is :mod:`crawlproj.traps`'."""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured

from ..traps import compile_patterns, is_dynamic


class CgiHopLimitMiddleware:
    """The CGI hop limit for requests the spider middleware never saw (a downloader middleware).

    Redirect targets, sitemap URLs, re-injected and seeded URLs come to the downloader
    without passing :class:`TrapDefenceMiddleware`. Here each redirect is a hop as a link
    would be: from a dynamic URL it adds one, from a static URL it resets the count. A
    request past ``CGI_HOP_LIMIT`` is refused (``IgnoreRequest``, counted as
    ``traps/cgi_hop_limit``) before anything connects. A retried request is not counted twice.
    """

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        if not s.getint("CGI_HOP_LIMIT"):
            raise NotConfigured
        self.stats = crawler.stats
        self.limit = s.getint("CGI_HOP_LIMIT")
        self.patterns = compile_patterns(s.getlist("DYNAMIC_URL_PATTERNS"))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CgiHopLimitMiddleware:
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> None:
        meta = request.meta
        redirects = meta.get("redirect_urls") or []
        counted = meta.get("cgi_redirects_counted", 0)
        if len(redirects) > counted:
            hops = meta.get("cgi_hops", 0)
            for url in redirects[counted:]:
                hops = hops + 1 if is_dynamic(url, self.patterns) else 0
            meta["cgi_hops"], meta["cgi_redirects_counted"] = hops, len(redirects)
        if meta.get("cgi_hops", 0) > self.limit:
            self.stats.inc_value("traps/cgi_hop_limit")
            raise IgnoreRequest(f"CGI hop limit: {meta['cgi_hops']} hops through dynamic URLs (CGI_HOP_LIMIT {self.limit})")
        return None
