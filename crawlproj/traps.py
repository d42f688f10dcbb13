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

* **Copy pages**: a page whose text a page of its own host already had (:class:`SeenTexts`)
  is a copy at another URL; its links are not followed, and a host whose new pages are mostly
  copies is slowed, then capped (:class:`CopyShare`), by the spider and the frontier.

URL length and session ids are handled by the canonicaliser, the per-site cap
(``MAX_PAGES_PER_HOST``, :class:`SiteCap`) by the frontier, which alone knows which URLs are new.

Where each rule is applied: a page's links in the spider middleware
(crawlproj.spidermiddlewares.trap_defence); requests that were not links in the downloader
middleware (crawlproj.downloadermiddlewares.cgi_hop_limit); copy pages in the spider
(crawlproj.spiders.base applies CopyPages: the copy's links) and the frontier (crawlproj.frontier.scheduler, a
capped host's queue dropped); the per-site cap and the per-domain budgets in the frontier
(crawlproj.frontier.scheduler, crawlproj.frontier.domains). docs/hostile-pages.md has them all.
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
    knows which URLs are new. The counts of the ``hosts`` hosts admitted to last are kept (0:
    all): a broad crawl links millions of hosts, and a host that comes back after as many
    others is counted from 0 again, while a host being capped is one the crawl keeps meeting."""

    def __init__(self, cap: int, hosts: int = 0) -> None:
        self.cap, self.hosts = cap, hosts
        self.admitted: dict[str, int] = {}  # host -> new URLs admitted, least recently first

    def admit(self, host: str) -> bool:
        if not self.cap:
            return True
        count = self.admitted.pop(host, 0)
        if count >= self.cap:
            self.admitted[host] = count
            return False
        self.admitted[host] = count + 1
        if self.hosts and len(self.admitted) > self.hosts:
            del self.admitted[next(iter(self.admitted))]
        return True


class SeenTexts:
    """The last ``keep`` (host, text digest) pairs seen (pure logic). A page whose text a page
    of its own host already had is a copy at another URL: a session id in the path or in every
    link, a calendar, a mirror. Its links lead to yet more copies, so they are not followed."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._seen: dict[tuple[str, bytes], None] = {}

    def copy(self, host: str, digest: bytes) -> bool:
        """Whether ``host`` had this text before (remembering it now)."""
        if self.keep <= 0:
            return False
        key = (host, digest[:16])
        if key in self._seen:
            return True
        if len(self._seen) >= self.keep:
            del self._seen[next(iter(self._seen))]
        self._seen[key] = None
        return False


class CopyShare:
    """Per host, its pages and the copies among them (pure logic). Once a host has ``min_pages``
    pages and copies are ``slow_share`` of them or more, its new pages are mostly copies: it is
    slowed (each further copy rests it); at ``cap_share`` or more it is capped (nothing more of
    it is fetched). A share of 0 turns that step off."""

    def __init__(self, min_pages: int, slow_share: float, cap_share: float) -> None:
        self.min_pages, self.slow_share, self.cap_share = min_pages, slow_share, cap_share
        self._counts: dict[str, list[int]] = {}  # host -> [pages, copies]
        self.capped: set[str] = set()

    def record(self, host: str, copy: bool) -> str | None:
        """Count a page of ``host``: "cap" when it is capped now, "slow" for a copy of a slowed
        host, else None."""
        if host in self.capped or not (self.slow_share or self.cap_share):
            return None
        counts = self._counts.setdefault(host, [0, 0])
        counts[0] += 1
        counts[1] += copy
        pages, copies = counts
        if pages < self.min_pages:
            return None
        if self.cap_share and copies >= self.cap_share * pages:
            self.capped.add(host)
            del self._counts[host]
            return "cap"
        if copy and self.slow_share and copies >= self.slow_share * pages:
            return "slow"
        return None


class CopyPages:
    """The copy-page rule as the spider applies it to each page read (pure logic): whether the
    page is a copy (:class:`SeenTexts`: its links are then not followed), and what its host's
    share of copies calls for (:class:`CopyShare`: "slow", "cap" or None), which the frontier acts on."""

    def __init__(self, keep: int, min_pages: int, slow_share: float, cap_share: float) -> None:
        self.texts = SeenTexts(keep)
        self.share = CopyShare(min_pages, slow_share, cap_share)

    @classmethod
    def from_settings(cls, settings) -> CopyPages:  # noqa: ANN001 - Scrapy settings
        return cls(settings.getint("DUPLICATE_TEXTS_KEPT"), settings.getint("COPY_HOST_MIN_PAGES"),
                   settings.getfloat("COPY_HOST_SLOW_SHARE"), settings.getfloat("COPY_HOST_CAP_SHARE"))

    def page(self, host: str, digest: bytes | None) -> tuple[bool, str | None]:
        """(copy, verdict) for a page of ``host`` whose text has ``digest`` (None: a page
        without text, which neither rule counts)."""
        if digest is None:
            return False, None
        copy = self.texts.copy(host, digest)
        return copy, self.share.record(host, copy)
