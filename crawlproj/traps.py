"""Spider-trap defences (seed 004 load reduction, seed 000 traps).

Pure rules first, then :class:`TrapDefenceMiddleware`, the spider middleware
that applies them to every link a page yields, before it reaches the frontier:

* **CGI hop limit**: a link followed from a dynamic page (a query, or a path
  matching ``DYNAMIC_URL_PATTERNS``) is one more CGI hop; a link from a static
  page resets the count. Beyond ``CGI_HOP_LIMIT`` the link is dropped. This is
  what stops an infinite calendar, separately from the hop limit from the seed.
* **Repeated path segments**: the same segment ``MAX_REPEATED_SEGMENTS`` times
  or more (``/a/b/a/b/a/``) is a relative-link loop.
* **Query parameters**: more than ``QUERY_MAX_PARAMS`` is a generated URL.

URL length and session ids are handled by the canonicaliser, the per-site cap
(``MAX_PAGES_PER_HOST``) by the frontier, which alone knows which URLs are new.
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
