"""Spider-trap defences: the rules (pure). The spider middleware
:class:`crawlproj.spidermiddlewares.trap_defence.TrapDefenceMiddleware` applies them to every
link a page yields, before it reaches the frontier, and the downloader middleware
:class:`crawlproj.downloadermiddlewares.cgi_hop_limit.CgiHopLimitMiddleware` applies the CGI
hop limit to requests that were not links (redirects, sitemaps, seeds):

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
from collections.abc import Iterable
from urllib.parse import urlsplit


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
