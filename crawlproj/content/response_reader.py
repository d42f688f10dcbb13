"""A response read by what it is (the spider's content-type dispatch).

The kind comes from the bytes as much as from the label (:func:`~crawlproj.content.types.content_family`):
an image or an archive is stored as a capture and never parsed, a PDF labelled octet-stream
is read. HTML is parsed once (:func:`~crawlproj.content.extract.parsed_page`), PDFs and feeds
are read off the reactor (:class:`~crawlproj.content.offload.PageWorkers`). What comes out is a
:class:`Reading`: the page's links, title, language, text digest and robots directives, for
the spider to filter and store.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from scrapy.http import Response, TextResponse

from ..urls import InvalidURL
from .extract import ExtractedLink, base_url, link_canonicalizer, page_budget, page_links, parsed_page
from .feeds import FeedDocument, read_feed
from .offload import DocumentFailed, PageWorkers, StageTimeout
from .pdf import PdfDocument, read_pdf
from .pdf import prepare as prepare_pdf
from .requisites import Requisite
from .robots_directives import header_directives
from .types import content_family

logger = logging.getLogger(__name__)


@dataclass
class Reading:
    """What a response held, by kind (``family``): everything but ``directives`` empty for a
    kind that is not read, or for an answer that is not 2xx."""

    family: str
    directives: set[str]  # robots directives, from X-Robots-Tag and <meta name=robots>
    title: str | None = None
    language: str | None = None
    text_digest: bytes | None = None  # the page's text (a feed's: its entries), for the copy-page rule
    document: PdfDocument | FeedDocument | None = None
    links: list[ExtractedLink] = field(default_factory=list)
    requisites: list[Requisite] = field(default_factory=list)
    requisite_base: str = ""  # the URL the page's requisites resolve against (its <base>)
    feed_entries: list[Any] | None = None  # a feed's entries, their URLs canonical
    content: Any = None  # the page's PageContent, when extracted with its parse (page_parse)


class ResponseReader:
    """Reads responses into :class:`Reading`; built once per spider from its settings.
    ``count(key, n)`` counts outcomes in the crawl's stats (``crawlproj/<key>``)."""

    def __init__(self, crawler: Any, settings: Any, count: Callable[..., None]) -> None:
        self.crawler, self.count = crawler, count
        self.robots_agent = settings.get("ROBOTSTXT_USER_AGENT") or "crawlproj"
        self.page_budget = page_budget(settings)
        self.link_canonical = link_canonicalizer(settings)
        self.pdf_max_pages = settings.getint("PDF_MAX_PAGES")
        self.pdf_max_chars = settings.getint("PDF_MAX_CHARS")
        self.pdf_timeout = settings.getfloat("PDF_TIMEOUT")
        self.pdf_max_memory = settings.getint("PDF_MAX_MEMORY")
        self.feeds = settings.getbool("FEEDS_ENABLED")
        self.max_links = settings.getint("MAX_LINKS_PER_PAGE")
        self.requisites = settings.getbool("REQUISITES_ENABLED")

    async def read(self, response: Response, stop: Callable[[], Awaitable[bool]]) -> Reading | None:
        """``response`` read; None when ``stop()`` (awaited between links: a page of thousands
        of links must not hold the reactor) says the crawl is closing."""
        now = time.time()
        directives = header_directives((v.decode("latin-1") for v in response.headers.getlist(b"X-Robots-Tag")),
                                       self.robots_agent, now)
        if directives:
            self.count("robots_header")
        reading = Reading(content_family(response.headers.get(b"Content-Type"), response.body), directives)
        if not 200 <= response.status < 300:
            return reading
        self.count(f"content_types/{reading.family}")
        if reading.family == "html" and isinstance(response, TextResponse):
            return await self._read_html(response, reading, now, stop)
        if reading.family == "pdf" and self.pdf_max_pages > 0:
            self._read_links(response, reading, await self.read_pdf(response))
        elif reading.family == "feed" and self.feeds:
            document = await self.read_feed(response)
            numbers = self._read_links(response, reading, document)
            reading.feed_entries = [replace(document.entries[number], loc=link.url)
                                    for number, link in zip(numbers, reading.links)]
            # The feed's own change is its entries', not its build date's.
            reading.text_digest = hashlib.sha256(
                "\n".join(f"{e.loc} {e.lastmod}" for e in reading.feed_entries).encode()).digest()
        return reading

    async def _read_html(self, response: TextResponse, reading: Reading, now: float,
                         stop: Callable[[], Awaitable[bool]]) -> Reading | None:
        try:
            page = parsed_page(response, self.page_budget)
            if self.requisites:
                reading.requisites = page.requisites
                reading.requisite_base = base_url(page, response.url, self.link_canonical)
            if page.over_budget:  # stored with what was read before the bound
                self.count(f"over_budget/{page.over_budget}")
            reading.directives |= page.robots_directives(self.robots_agent, now)
            reading.title, reading.language, reading.text_digest = page.title, page.declared_language, page.text_digest
            reading.content = page.content
            for found in page_links(page, response.url, self.link_canonical):
                if await stop():
                    return None
                if isinstance(found, InvalidURL):
                    self.count(f"url_rejected/{found.reason}")
                else:
                    reading.links.append(found)
            if page.links_cut:  # a link farm's page: the links past MAX_LINKS_PER_PAGE are left
                self.count("over_budget/links")
        except ValueError as exc:  # a body that cannot be decoded or parsed
            self.count("parse_errors")
            logger.warning("could not parse %s: %s", response.url, exc)
        return reading

    def _read_links(self, response: Response, reading: Reading, document: PdfDocument | FeedDocument) -> list[int]:
        """A document's title, language and links (canonical; the ones that are not URLs counted);
        returns the kept links' numbers in ``document.links``."""
        reading.document, reading.title, reading.language = document, document.title, document.language
        numbers = []
        for number, href in enumerate(document.links):
            try:
                target = self.link_canonical(href, response.url)
            except InvalidURL as exc:
                self.count(f"url_rejected/{exc.reason}")
                continue
            reading.links.append(ExtractedLink(target, "", False, document.kind))
            numbers.append(number)
        return numbers

    async def read_feed(self, response: Response) -> FeedDocument:
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
            logger.warning("feed %s: %s", response.url, document.outcome)
        return document

    async def read_pdf(self, response: Response) -> PdfDocument:
        """What a PDF response holds (:mod:`crawlproj.content.pdf`), read in the document helper
        within ``PDF_TIMEOUT`` and ``PDF_MAX_MEMORY``; counted by outcome (``documents/...``)."""
        workers = PageWorkers.of(self.crawler)
        args = (response.body, self.pdf_max_pages, self.pdf_max_chars)
        try:
            if workers.enabled:
                document = await workers.run_document(read_pdf, *args, timeout=self.pdf_timeout,
                                                      memory=self.pdf_max_memory, prepare=prepare_pdf)
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
            logger.warning("PDF %s: %s (%d of %d pages read)", response.url, document.outcome,
                           document.pages_read, document.pages)
        return document
