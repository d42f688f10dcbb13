"""What the ``web`` and ``site`` spiders share: turning responses into items and links.

Each part lives where its name says: a response is read by its kind in
:mod:`crawlproj.content.response_reader`, its links filtered by
:class:`~crawlproj.spiders.link_filter.LinkFilter`, the copy-page rule is
:class:`crawlproj.traps.CopyPages` (with the other trap rules), requisites and sitemaps are
:mod:`.requisites` and :mod:`.sitemaps`; this module joins them into the spider's callbacks.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from .. import signals as crawl_signals
from ..content.language import declared_language
from ..content.response_reader import Reading, ResponseReader
from ..downloadermiddlewares.ai_signals import RESERVED as AI_USE_RESERVED
from ..engine_state import engine_closing
from ..extensions.console import note_refusal
from ..extensions.stalls import TurnTaker, WorkGate
from ..fetch_errors import error_kind
from ..items import FetchError, PageItem, SitemapUrls, Skipped
from ..scope import Scope
from ..traps import CopyPages
from ..urls import InvalidURL, canonicalize, host_of
from .arguments import check_arguments
from .link_filter import LinkFilter
from .requisites import RequisiteCallbacks, header_pairs
from .sitemaps import SitemapCallbacks


class PageSpider(RequisiteCallbacks, SitemapCallbacks, scrapy.Spider):
    """Parses every response into a :class:`PageItem` and follows the links in scope.

    Each page is parsed once (:func:`~crawlproj.content.extract.parsed_page`). Links are
    canonicalised through a memo (most are a site's navigation, seen on every page), and a
    link to a URL the frontier's URL-seen filter already holds is not made into a request
    at all (:data:`crawlproj.signals.url_seen_test`); the page's stored links are all of them.
    """

    scope: Scope
    sitemap: str | None = None  # -a sitemap=URL[,URL...]: sitemaps to read at the start
    #: The ``-a`` arguments of crawlproj's own spiders (with Scrapyd's ``_job``, the revisit
    #: mode and the topic every spider takes): any other is most likely misspelt.
    ARGUMENTS: tuple[str, ...] = ("sitemap", "mode", "topic", "_job")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        check_arguments(type(self), kwargs)
        super().__init__(*args, **kwargs)

    def _init_from_settings(self) -> Any:
        """Read the settings the spider keeps; returns them (as the crawl will have them)."""
        from ..addon import effective_settings

        s = effective_settings(self.crawler.settings)  # (the add-on's are not applied yet)
        self.session_params = tuple(s.getlist("SESSION_ID_PARAMS"))
        self.max_url_length = s.getint("URL_MAX_LENGTH")
        self.reader = ResponseReader(self.crawler, s, self.count)
        self.links = LinkFilter(self.crawler, s.getbool("FOLLOW_NOFOLLOW"), self.count)
        self.copy_pages = CopyPages.from_settings(s)
        self.retry_times = s.getint("RETRY_TIMES") if s.getbool("RETRY_ENABLED") else 0
        self.retry_http_codes = {int(c) for c in s.getlist("RETRY_HTTP_CODES")}
        self.deadletter_kinds = set(s.getlist("DEADLETTERS_KINDS"))
        self.link_gate = WorkGate(s.getint("LINK_STAGE_PAGES"), s.getint("PAGE_STAGE_BACKLOG"),
                                  s.getint("PAGE_STAGE_BACKLOG_BYTES"))
        self.close_grace = s.getfloat("CLOSE_GRACE")
        self.init_requisites(s)
        self._closing_since: float | None = None
        self.crawler.signals.connect(self.backlog_test, signal=crawl_signals.fetch_backlog_test)
        return s

    def exhausted(self, request: scrapy.Request, url: str, kind: str, error: str) -> None:
        """Announce a request whose retries ran out on a transient failure (the dead-letter queue keeps it)."""
        tried = request.meta.get("retry_times", 0)
        if kind in self.deadletter_kinds and tried >= request.meta.get("max_retry_times", self.retry_times):
            self.crawler.signals.send_catch_log(crawl_signals.retries_exhausted, url=url, host=host_of(url), kind=kind,
                                                attempts=tried + 1, error=error, depth=request.meta.get("depth", 0))

    def backlog_test(self) -> Any:
        """The link gate's ``busy`` (answers :data:`crawlproj.signals.fetch_backlog_test`)."""
        return self.link_gate.busy if self.link_gate.backlog or self.link_gate.backlog_bytes else None

    def canonical(self, url: str, base: str | None = None) -> str | None:
        """Canonical URL, or None after counting why it was refused."""
        try:
            return canonicalize(url, base, session_params=self.session_params, max_length=self.max_url_length)
        except InvalidURL as exc:
            self.count(f"url_rejected/{exc.reason}")
            self.logger.debug("refused URL %s", exc)
            return None

    def count(self, key: str, n: int = 1) -> None:
        self.crawler.stats.inc_value(f"crawlproj/{key}", n)

    def request(self, url: str, **kwargs: Any) -> scrapy.Request:
        return scrapy.Request(url, callback=self.parse, errback=self.on_error, **kwargs)

    # -- responses -------------------------------------------------------
    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        # The page's work (its links above all) runs behind the link gate: a few pages at a time
        # take the reactor's turns, and a crawl closing for CLOSE_GRACE leaves the rest for its resume.
        async with self.link_gate.turn(len(response.body)):
            read = None if self._past_close_grace() else await self._read_page(response)
        if read is None:
            # Neither links nor page: with JOBDIR the journal still has it pending, and a resume
            # fetches it again. Stored without its links, its links would be lost to the resume.
            self.count("pages_left_at_close")
            return
        follow, item, extras = read
        for url in follow:  # links go to the frontier before the page goes to the store (its journal)
            yield self.request(url)
        yield item
        for extra in extras:
            yield extra

    def _past_close_grace(self) -> bool:
        """Whether the crawl has been closing for ``CLOSE_GRACE`` seconds: pages fetched before a
        close are still read and stored for that long (a clean stop leaves nothing to fetch again),
        and dropped after it (a close held by a link farm's pages ends in seconds)."""
        if not engine_closing(self.crawler):
            return False
        if self._closing_since is None:
            self._closing_since = time.monotonic()
        return time.monotonic() - self._closing_since >= self.close_grace

    async def _read_page(self, response: Response) -> tuple[list[str], Any, list[Any]] | None:
        """The URLs to follow from ``response``, its item (a :class:`PageItem`, or :class:`Skipped`
        for noindex) and the items that go after it (a feed's entries, as :class:`SitemapUrls`;
        requisites); None when the crawl began closing meanwhile."""
        request_url = (response.meta.get("redirect_urls") or [response.request.url])[0]
        url = self.canonical(request_url) or request_url
        if response.status in self.retry_http_codes:
            self.exhausted(response.request, url, f"http_{response.status}", f"HTTP {response.status}")
        turns = TurnTaker()  # a page of thousands of links must not hold the reactor

        async def stop() -> bool:
            return await turns.maybe() and self._past_close_grace()

        reading = await self.reader.read(response, stop)
        if reading is None:
            return None
        extras: list[Any] = []  # items that go after the page's
        if reading.feed_entries is not None:
            # The entries' dates are change evidence for the pages they link, as a sitemap's <lastmod> is.
            extras.append(SitemapUrls(url, reading.feed_entries, time.time()))
        nofollow = "nofollow" in reading.directives
        page_links = [(link.url, link.anchor, link.nofollow or nofollow) for link in reading.links]
        links = reading.links
        if nofollow:
            self.count("meta_nofollow")
            links = []
        host = host_of(url)
        copy, verdict = self.copy_pages.page(host, reading.text_digest)
        if links and copy:
            self.count("duplicate_page_links_skipped")
            links = []
        if verdict is not None:
            self.count(f"copy_host/{verdict}")
            self.crawler.signals.send_catch_log(crawl_signals.copy_host, host=host, verdict=verdict)
        followed = await self.links.follow(links, self.scope, stop)
        if followed is None:
            return None
        if "noindex" in reading.directives:
            self.count("noindex")
            return followed, Skipped(url, "noindex"), extras
        loaded = response.meta.pop("render_loaded", None)
        if loaded:  # what the browser loaded for the page: archived as it came, not asked again
            extras.extend(self.loaded_requisites(loaded, response.url))
        if reading.requisites:  # after the page's item: archived beside it, fetched as their hosts allow
            extras.extend(self.requisite_requests(reading.requisites, reading.requisite_base, response.url,
                                                  {url for url, *_ in loaded or ()}))
        return followed, self.page_item(response, url, host, reading, page_links), extras

    def page_item(self, response: Response, url: str, host: str, reading: Reading,
                  links: list[tuple[str, str, bool]]) -> PageItem:
        return PageItem(
            url=url,
            final_url=response.url,
            host=host,
            status=response.status,
            content_type=(response.headers.get(b"Content-Type") or b"").decode("latin-1") or None,
            charset=response.encoding if isinstance(response, TextResponse) else None,
            fetched_at=time.time(),
            fetch_duration=response.meta.get("download_latency"),
            bytes=len(response.body),
            content_hash=hashlib.sha256(response.body).hexdigest(),
            title=reading.title,
            language=reading.language or declared_language(
                None, None, (response.headers.get(b"Content-Language") or b"").decode("latin-1")) or "",
            depth=response.meta.get("depth", 0),
            ip=str(response.ip_address) if response.ip_address else None,
            links=links,
            body=response.body,
            response_headers=header_pairs(response.headers),
            request_headers=header_pairs(response.request.headers),
            rendered="playwright" in response.flags,
            not_modified=response.status == 304,
            ai_signals=response.meta.get("ai_signals") or {},
            document=reading.document,
            text_hash=reading.text_digest.hex() if reading.feed_entries is not None else None,
            content=reading.content,
        )

    async def on_error(self, failure: Failure) -> AsyncIterator[Any]:
        request = failure.request  # type: ignore[attr-defined]
        if failure.check(HttpError):  # only when HTTPERROR_ALLOW_ALL is off
            async for out in self.parse(failure.value.response):
                yield out
            return
        kind = error_kind(failure)
        linked = (request.meta.get("redirect_urls") or [request.url])[0]  # the URL a page linked
        url = self.canonical(linked) or linked
        if kind == "ignored" and "robots.txt" in str(failure.value):
            self.count("robots_forbidden")
            note_refusal(self.crawler, host_of(url), "robots", url)
            yield Skipped(url, "robots")
            return
        if kind == "ignored" and str(failure.value).startswith(AI_USE_RESERVED):
            self.count("ai_use_reserved")
            yield Skipped(url, "ai_reserved")
            return
        self.count(f"fetch_errors/{kind}")
        self.exhausted(request, url, kind, f"{type(failure.value).__name__}: {failure.value}")
        yield FetchError(url=url, host=host_of(url), kind=kind, message=str(failure.value)[:500],
                         depth=request.meta.get("depth", 0), at=time.time())
