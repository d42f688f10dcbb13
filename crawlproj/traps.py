"""Spider-trap defences (seed 004 load reduction, seed 000 traps).

Pure rules first, then :class:`TrapDefenceMiddleware`, the spider middleware
that applies them to every link a page yields, before it reaches the frontier
(and :class:`CgiHopLimitMiddleware`, which applies the CGI hop limit in the
downloader to requests that were not links: redirects, sitemaps, seeds):

* **CGI hop limit**: a link followed from a dynamic page (a query, or a path
  matching ``DYNAMIC_URL_PATTERNS``) is one more CGI hop; a link from a static
  page resets the count. Beyond ``CGI_HOP_LIMIT`` the link is dropped. This is
  what stops an infinite calendar, separately from the hop limit from the seed.
* **Repeated path segments**: the same segment ``MAX_REPEATED_SEGMENTS`` times
  or more (``/a/b/a/b/a/``) is a relative-link loop.
* **Query parameters**: more than ``QUERY_MAX_PARAMS`` is a generated URL.

URL length and session ids are handled by the canonicaliser, the per-site cap
(``MAX_PAGES_PER_HOST``, :class:`SiteCap`) by the frontier, which alone knows which URLs are new.
Each drop is counted in stats as ``traps/<defence>``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured


def is_dynamic(url: str, patterns: re.Pattern[str]) -> bool:
    parts = urlsplit(url)
    return bool(parts.query) or bool(patterns.search(parts.path))


def repeated_segments(path: str) -> int:
    """How often the most repeated non-empty path segment occurs."""
    counts = Counter(s for s in path.split("/") if s)
    return max(counts.values(), default=0)


def query_params(url: str) -> int:
    query = urlsplit(url).query
    return len([p for p in query.split("&") if p]) if query else 0


def compile_patterns(patterns: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns) or r"(?!)", re.IGNORECASE)


class SiteCap:
    """The per-site cap (``MAX_PAGES_PER_HOST``; 0 is none): :meth:`admit` says whether a
    host may have one more new URL, counting it if so. The frontier asks, since it alone
    knows which URLs are new."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.admitted: Counter[str] = Counter()  # host -> new URLs admitted

    def admit(self, host: str) -> bool:
        if self.cap and self.admitted[host] >= self.cap:
            return False
        self.admitted[host] += 1
        return True


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
