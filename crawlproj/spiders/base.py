"""What the ``web`` and ``site`` spiders share: turning responses into items and links."""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from .. import signals as crawl_signals
from ..extensions.console import note_refusal
from ..content.extract import ExtractedLink, base_url, iter_links, page_budget, parsed_page
from ..content.language import declared_language
from ..content.offload import DocumentFailed, PageWorkers, StageTimeout
from ..content.feeds import FeedDocument, read_feed
from ..content.pdf import PdfDocument, read_pdf
from ..content.requisites import Requisite, RequisiteBudget, page_requisites, stylesheet_requisites
from ..content.requisites import SELECTOR as REQUISITE_SELECTOR
from ..content.pdf import prepare as prepare_pdf
from ..content.robots_directives import header_directives
from ..content.sitemaps import read_sitemap
from ..content.types import content_family
from ..engine_state import engine_closing
from ..fetch_errors import error_kind as _error_kind
from ..items import FetchError, PageItem, RequisiteItem, SitemapUrls, Skipped
from ..downloadermiddlewares.ai_signals import RESERVED as AI_USE_RESERVED
from ..scope import Scope
from ..traps import CopyShare, SeenTexts
from ..extensions.stalls import TurnTaker, WorkGate
from ..urls import InvalidURL, LinkCanonicalizer, canonicalize, host_of
from .arguments import check_arguments, sitemap_arg

_UNASKED = object()


#: A render's loads by Playwright resource type, as requisite kinds ("fetch": fetch() and XHR answers).
_RESOURCE_KINDS = {"stylesheet": "stylesheet", "script": "script", "image": "image", "font": "font",
                   "media": "media", "document": "iframe"}


def _header_pairs(headers: Any) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, values in headers.items() for v in values]


class PageSpider(scrapy.Spider):
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
        self.follow_nofollow = s.getbool("FOLLOW_NOFOLLOW")
        self.robots_agent = s.get("ROBOTSTXT_USER_AGENT") or "crawlproj"
        self.page_budget = page_budget(s)
        self.link_canonical = LinkCanonicalizer(self.session_params, self.max_url_length)
        self._url_seen: Any = _UNASKED
        self._urls_seen: Any = _UNASKED
        self._host_admissible: Any = _UNASKED
        self.retry_times = s.getint("RETRY_TIMES") if s.getbool("RETRY_ENABLED") else 0
        self.retry_http_codes = {int(c) for c in s.getlist("RETRY_HTTP_CODES")}
        self.deadletter_kinds = set(s.getlist("DEADLETTERS_KINDS"))
        self.texts_seen = SeenTexts(s.getint("DUPLICATE_TEXTS_KEPT"))
        self.copy_share = CopyShare(s.getint("COPY_HOST_MIN_PAGES"), s.getfloat("COPY_HOST_SLOW_SHARE"),
                                    s.getfloat("COPY_HOST_CAP_SHARE"))
        self.link_gate = WorkGate(s.getint("LINK_STAGE_PAGES"), s.getint("PAGE_STAGE_BACKLOG"))
        self.close_grace = s.getfloat("CLOSE_GRACE")
        self.pdf_max_pages = s.getint("PDF_MAX_PAGES")
        self.feeds = s.getbool("FEEDS_ENABLED")
        self.max_links = s.getint("MAX_LINKS_PER_PAGE")
        self.requisites = s.getbool("REQUISITES_ENABLED")
        self.requisite_budget = RequisiteBudget(s.getint("REQUISITES_MAX_PER_PAGE"), s.getint("REQUISITES_MAX_PER_HOST"),
                                                s.getlist("REQUISITES_TYPES"))
        self.requisite_max_bytes = s.getint("REQUISITES_MAX_BYTES")
        self.requisite_other_hosts = s.getbool("REQUISITES_OTHER_HOSTS")
        self._loaded_archived: set[str] = set()  # what renders' browsers loaded and the archive has
        self._closing_since: float | None = None
        self.crawler.signals.connect(self.backlog_test, signal=crawl_signals.fetch_backlog_test)
        return s

    def exhausted(self, request: scrapy.Request, url: str, kind: str, error: str) -> None:
        """Announce a request whose retries ran out on a transient failure (the dead-letter queue keeps it)."""
        tried = request.meta.get("retry_times", 0)
        if kind in self.deadletter_kinds and tried >= request.meta.get("max_retry_times", self.retry_times):
            self.crawler.signals.send_catch_log(crawl_signals.retries_exhausted, url=url, host=host_of(url), kind=kind,
                                                attempts=tried + 1, error=error, depth=request.meta.get("depth", 0))

    def start_sitemaps(self) -> list[scrapy.Request]:
        """Requests for the sitemaps ``-a sitemap=`` names."""
        return [self.sitemap_request(url) for url in sitemap_arg(self.sitemap, self.session_params, self.max_url_length)]

    def url_seen(self) -> Any:
        """The frontier's test for URLs it already holds, or None (asked once)."""
        if self._url_seen is _UNASKED:
            self._url_seen = self._frontier_test(crawl_signals.url_seen_test)
        return self._url_seen

    def urls_seen(self) -> Any:
        """The frontier's test of many URLs at once, or None (asked once)."""
        if self._urls_seen is _UNASKED:
            self._urls_seen = self._frontier_test(crawl_signals.urls_seen_test)
        return self._urls_seen

    def backlog_test(self) -> Any:
        """The link gate's ``busy`` (answers :data:`crawlproj.signals.fetch_backlog_test`)."""
        return self.link_gate.busy if self.link_gate.backlog else None

    def host_admissible(self) -> Any:
        """The frontier's test for hosts it admits new URLs of, or None (asked once)."""
        if self._host_admissible is _UNASKED:
            self._host_admissible = self._frontier_test(crawl_signals.host_admission_test)
        return self._host_admissible

    def _frontier_test(self, signal: object) -> Any:
        answers = self.crawler.signals.send_catch_log(signal)
        return next((test for _, test in answers if callable(test)), None)

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
        async with self.link_gate.turn():
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
        for noindex) and the items that go after it (a feed's entries, as :class:`SitemapUrls`);
        None when the crawl began closing meanwhile."""
        request_url = (response.meta.get("redirect_urls") or [response.request.url])[0]
        url = self.canonical(request_url) or request_url
        depth = response.meta.get("depth", 0)
        links: list[ExtractedLink] = []
        # X-Robots-Tag says what <meta name=robots> says, for any kind of response.
        now = time.time()
        directives = header_directives((v.decode("latin-1") for v in response.headers.getlist(b"X-Robots-Tag")),
                                       self.robots_agent, now)
        if directives:
            self.count("robots_header")
        if response.status in self.retry_http_codes:
            self.exhausted(response.request, url, f"http_{response.status}", f"HTTP {response.status}")
        title = language = text_digest = document = None
        turns = TurnTaker()  # a page of thousands of links must not hold the reactor
        # What the response is, by its bytes as much as by its label: an image or an archive is
        # stored as a capture and never parsed as HTML, a PDF labelled octet-stream is read.
        family = content_family(response.headers.get(b"Content-Type"), response.body)
        if 200 <= response.status < 300:
            self.count(f"content_types/{family}")
        pdf = family == "pdf" and self.pdf_max_pages > 0
        feed = family == "feed" and self.feeds
        html_page = family == "html" and isinstance(response, TextResponse)
        extras: list[Any] = []  # items that go after the page's
        requisites: list[Requisite] = []
        if html_page and 200 <= response.status < 300:
            try:
                page = parsed_page(response, self.page_budget)
                if self.requisites:
                    requisites = page.requisites
                    requisite_base = base_url(page, response.url, self.link_canonical)
                if page.over_budget:  # stored with what was read before the bound
                    self.count(f"over_budget/{page.over_budget}")
                directives |= page.robots_directives(self.robots_agent, now)
                title = page.title
                language = page.declared_language
                text_digest = page.text_digest
                for found in iter_links(page, response.url, self.link_canonical):
                    if await turns.maybe() and self._past_close_grace():
                        return None
                    if isinstance(found, InvalidURL):
                        self.count(f"url_rejected/{found.reason}")
                    else:
                        links.append(found)
                if page.links_cut:  # a link farm's page: the links past MAX_LINKS_PER_PAGE are left
                    self.count("over_budget/links")
            except ValueError as exc:  # a body that cannot be decoded or parsed
                self.count("parse_errors")
                self.logger.warning("could not parse %s: %s", response.url, exc)
        elif (pdf or feed) and 200 <= response.status < 300:
            document = await (self._read_pdf(response) if pdf else self._read_feed(response))
            title, language = document.title, document.language
            entries = []
            for number, href in enumerate(document.links):
                try:
                    target = self.link_canonical(href, response.url)
                except InvalidURL as exc:
                    self.count(f"url_rejected/{exc.reason}")
                    continue
                links.append(ExtractedLink(target, "", False, document.kind))
                if feed:
                    entries.append(replace(document.entries[number], loc=target))
            if feed:
                # The entries' dates are change evidence for the pages they link, as a sitemap's
                # <lastmod> is; the feed's own change is its entries', not its build date's.
                extras.append(SitemapUrls(url, entries, time.time()))
                text_digest = hashlib.sha256("\n".join(f"{e.loc} {e.lastmod}" for e in entries).encode()).digest()
        page_links = [(link.url, link.anchor, link.nofollow or "nofollow" in directives) for link in links]
        if "nofollow" in directives:
            self.count("meta_nofollow")
            links = []
        host = host_of(url)
        copy = text_digest is not None and self.texts_seen.copy(host, text_digest)
        if links and copy:
            self.count("duplicate_page_links_skipped")
            links = []
        if text_digest is not None and (verdict := self.copy_share.record(host, copy)) is not None:
            self.count(f"copy_host/{verdict}")
            self.crawler.signals.send_catch_log(crawl_signals.copy_host, host=host, verdict=verdict)
        seen, admissible = self.url_seen(), self.host_admissible()
        followed: dict[str, None] = {}  # in page order
        for link in links:
            if await turns.maybe() and self._past_close_grace():
                return None
            if link.nofollow and not self.follow_nofollow:
                self.count("nofollow_skipped")
                continue
            if link.url in followed:
                continue
            if seen is not None and seen(link.url):
                self.count("links_seen")
                continue
            if admissible is not None and not admissible(host_of(link.url)):
                self.count("links_over_domain_hosts")
                continue
            reason = self.scope.refuses(link.url)
            if reason:
                self.count(f"out_of_scope/{reason}")
                note_refusal(self.crawler, host_of(link.url), "scope", reason)
                continue
            followed[link.url] = None
        many = self.urls_seen()
        if many is not None and followed:  # one round trip for the page's new links
            for known in many(list(followed)):
                del followed[known]
                self.count("links_seen")
        if "noindex" in directives:
            self.count("noindex")
            return list(followed), Skipped(url, "noindex"), extras
        loaded = response.meta.pop("render_loaded", None)
        if loaded:  # what the browser loaded for the page: archived as it came, not asked again
            extras.extend(self.loaded_requisites(loaded, response.url))
        if requisites:  # after the page's item: archived beside it, fetched as their hosts allow
            extras.extend(self.requisite_requests(requisites, requisite_base, response.url,
                                                  {url for url, *_ in loaded or ()}))
        return list(followed), PageItem(
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
            title=title,
            language=language or declared_language(
                None, None, (response.headers.get(b"Content-Language") or b"").decode("latin-1")) or "",
            depth=depth,
            ip=str(response.ip_address) if response.ip_address else None,
            links=page_links,
            body=response.body,
            response_headers=_header_pairs(response.headers),
            request_headers=_header_pairs(response.request.headers),
            rendered="playwright" in response.flags,
            not_modified=response.status == 304,
            ai_signals=response.meta.get("ai_signals") or {},
            document=document,
            text_hash=text_digest.hex() if feed and text_digest is not None else None,
        ), extras

    # -- page requisites ---------------------------------------------------
    def loaded_requisites(self, loaded: list[tuple], referer: str) -> list[RequisiteItem]:
        """What a render's browser loaded (scripts, the answers to its fetch() and XHR calls), as
        Browsertrix archives a browser's traffic: each URL once per crawl."""
        items = []
        for url, resource_type, status, headers, body in loaded:
            if url in self._loaded_archived:
                continue
            self._loaded_archived.add(url)
            items.append(RequisiteItem(url=url, requested_url=url, kind=_RESOURCE_KINDS.get(resource_type, "fetch"),
                                       status=status, body=body, response_headers=headers,
                                       request_headers=[("Referer", referer)], requested=False))
        self.count("requisites/rendered", len(items))
        return items

    def requisite_requests(self, requisites: list[Requisite], base: str, referer: str,
                           loaded: set[str] = frozenset()) -> list[scrapy.Request]:
        """Requests for a page's (or a stylesheet's) requisites: resolved as written (no session id
        removed: replay asks for the URL the page names), in scope by ALLOWED_DOMAINS, not seen
        before, within the budget; at depth 0, so DEPTH_LIMIT never drops a page's last ones."""
        seen, taken = self.url_seen(), {}
        page_host = host_of(referer)
        for requisite in requisites:
            try:
                url = canonicalize(requisite.url, base, session_params=(), max_length=self.max_url_length)
            except InvalidURL as exc:
                self.count(f"requisites/refused/{exc.reason}")
                continue
            if url in taken or url in loaded:
                continue
            host = host_of(url)
            if self.scope.refuses_requisite(url) or (not self.requisite_other_hosts and host != page_host):
                self.count("requisites/refused/scope")
                continue
            if seen is not None and seen(url):
                self.count("requisites/seen")
                continue
            refused = self.requisite_budget.admit(host, requisite.kind, len(taken))
            if refused:
                self.count(f"requisites/refused/{refused}")
                continue
            taken[url] = scrapy.Request(
                url, callback=self.parse_requisite, errback=self.on_requisite_error, headers={"Referer": referer},
                meta={"requisite": requisite.kind, "render": False, "depth_reset": True,
                      "download_maxsize": self.requisite_max_bytes})
        self.count("requisites/requested", len(taken))
        return list(taken.values())

    async def parse_requisite(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        """A requisite fetched: archived as it came (:class:`RequisiteItem`), never read as a page.
        A stylesheet is read for its own imports, fonts and images, an iframe's document for its
        own requisites."""
        kind = response.meta.get("requisite", "image")
        requested = (response.meta.get("redirect_urls") or [response.request.url])[0]
        self.count(f"requisites/fetched/{kind}")
        yield RequisiteItem(url=response.url, requested_url=requested, kind=kind, status=response.status,
                            body=response.body, response_headers=_header_pairs(response.headers),
                            request_headers=_header_pairs(response.request.headers))
        if not 200 <= response.status < 300 or not isinstance(response, TextResponse):
            return
        family = content_family(response.headers.get(b"Content-Type"), response.body)
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1").lower()
        if "css" in content_type or (kind == "stylesheet" and family != "html"):
            found = stylesheet_requisites(response.text)
        elif kind == "iframe" and family == "html":
            found = page_requisites(parsed_page(response, self.page_budget).tree.css(REQUISITE_SELECTOR))
        else:
            return
        for request in self.requisite_requests(found, response.url, response.url):
            yield request

    async def on_requisite_error(self, failure: Failure) -> AsyncIterator[Any]:
        """A requisite that could not be fetched: counted by kind of failure, and completed
        (a resumed crawl does not ask for it again)."""
        request = failure.request  # type: ignore[attr-defined]
        if failure.check(HttpError):  # only when HTTPERROR_ALLOW_ALL is off: archived as it came
            async for out in self.parse_requisite(failure.value.response):
                yield out
            return
        kind = _error_kind(failure)
        if kind == "ignored" and "robots.txt" in str(failure.value):
            kind = "robots"
        self.count(f"requisites/failed/{kind}")
        yield Skipped((request.meta.get("redirect_urls") or [request.url])[0], "requisite")

    async def _read_feed(self, response: Response) -> FeedDocument:
        """What an RSS or Atom feed lists (:mod:`crawlproj.content.feeds`), read in a page thread."""
        workers = PageWorkers.of(self.crawler)
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1") or None
        args = (response.body, response.url, content_type, self.max_links or 10_000)
        try:
            document = await workers.run(read_feed, *args) if workers.enabled else read_feed(*args)
        except StageTimeout:
            document = FeedDocument(outcome="timeout")
        self.count(f"documents/feed/{document.format or 'unknown'}")
        self.count("documents/feed_entries", len(document.entries))
        if document.dates_ignored:
            self.count("documents/feed_dates_ignored")
        if document.outcome:
            self.count(f"documents/{document.outcome}")
            self.logger.warning("feed %s: %s", response.url, document.outcome)
        return document

    async def _read_pdf(self, response: Response) -> PdfDocument:
        """What a PDF response holds (:mod:`crawlproj.content.pdf`), read in the document helper
        within ``PDF_TIMEOUT`` and ``PDF_MAX_MEMORY``; counted by outcome (``documents/...``)."""
        workers = PageWorkers.of(self.crawler)
        s = self.crawler.settings
        args = (response.body, self.pdf_max_pages, s.getint("PDF_MAX_CHARS"))
        try:
            if workers.enabled:
                document = await workers.run_document(read_pdf, *args, timeout=s.getfloat("PDF_TIMEOUT"),
                                                      memory=s.getint("PDF_MAX_MEMORY"), prepare=prepare_pdf)
            else:  # PAGE_THREADS 0: the page cap still bounds it
                document = read_pdf(*args)
        except StageTimeout:
            document = PdfDocument(outcome="timeout")
        except DocumentFailed:
            document = PdfDocument(outcome="over_budget/pdf_memory")
        self.count("documents/pdf")
        self.count("documents/pdf_pages_read", document.pages_read)
        if document.outcome:
            self.count(f"documents/{document.outcome}")
            self.logger.warning("PDF %s: %s (%d of %d pages read)", response.url, document.outcome,
                                document.pages_read, document.pages)
        return document

    def sitemap_request(self, url: str, level: int = 0) -> scrapy.Request:
        """A request for a sitemap (``level`` 1: listed by a sitemap index). Always fetched, even
        when seen before: a sitemap is read again each time robots.txt is. Depth -1: its URLs are
        at depth 0, like seeds."""
        return scrapy.Request(url, callback=self.parse_sitemap, errback=self.on_error, dont_filter=True, priority=1,
                              meta={"render": False, "depth": -1, "sitemap_level": level})

    async def parse_sitemap(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        """A sitemap or sitemap index (:mod:`crawlproj.content.sitemaps`): its URLs in scope become
        requests, and all of them, with their ``lastmod``, go to the pipelines as :class:`SitemapUrls`.
        An index's sitemaps are fetched in turn; an index inside an index is not (sitemaps.org)."""
        url = self.canonical(response.request.url) or response.request.url
        workers = PageWorkers.of(self.crawler)
        try:  # a 50 MB sitemap takes a quarter of a second to read: not on the reactor
            sitemap = await workers.run(read_sitemap, response.body) if workers.enabled else read_sitemap(response.body)
        except (ValueError, StageTimeout) as exc:
            self.count("sitemap_errors")
            self.logger.warning("unreadable sitemap %s: %s", response.url, exc)
            yield Skipped(url, "sitemap")
            return
        if sitemap.cut:
            self.count("sitemap_cut")
            self.logger.warning("sitemap %s is over 50 MB unpacked: read up to the limit", response.url)
        if sitemap.dropped:
            self.count("sitemap_urls_dropped", sitemap.dropped)
            self.logger.warning("sitemap %s lists over 50,000 URLs: %d left out", response.url, sitemap.dropped)
        turns = TurnTaker()
        if sitemap.kind == "sitemapindex":
            if response.meta.get("sitemap_level", 0) >= 1:
                self.count("sitemap_nested_index")
                self.logger.warning("sitemap index %s is listed by another index: not followed", response.url)
            else:
                for entry in sitemap.entries:
                    child = self.canonical(entry.loc, response.url)
                    if child is not None:
                        yield self.sitemap_request(child, level=1)
            yield Skipped(url, "sitemap")
            return
        seen = self.url_seen()
        entries = []
        for entry in sitemap.entries:
            await turns.maybe()
            loc = self.canonical(entry.loc, response.url)
            if loc is None:
                continue
            entries.append(replace(entry, loc=loc))
            if self.scope.refuses(loc):
                continue
            self.count("sitemap_urls")
            if seen is None or not seen(loc):
                yield self.request(loc)
        yield SitemapUrls(url, entries, time.time())
        yield Skipped(url, "sitemap")

    async def on_error(self, failure: Failure) -> AsyncIterator[Any]:
        request = failure.request  # type: ignore[attr-defined]
        if failure.check(HttpError):  # only when HTTPERROR_ALLOW_ALL is off
            async for out in self.parse(failure.value.response):
                yield out
            return
        kind = _error_kind(failure)
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
