"""HTML pages parsed, and their content extracted, in a page thread (a downloader middleware),
so that no page holds the reactor; the threads and the helper process are
:class:`crawlproj.content.offload.PageWorkers`."""

from __future__ import annotations

import logging
from typing import Any

from scrapy.crawler import Crawler
from scrapy.http import Request, Response, TextResponse
from w3lib.encoding import html_to_unicode

from .. import signals as crawl_signals
from ..engine_state import engine_closing
from ..content.budget import PageBudget
from ..content.extract import adopt_parsed_page, link_canonicalizer, page_budget, resolve_links
from ..content.extraction import extract_content
from ..content.offload import PageWorkers, StageTimeout
from ..content.page import SHELL_TEXTS, ParsedPage
from ..content.types import content_family
from ..urls import LinkCanonicalizer

logger = logging.getLogger(__name__)


def _parse(body: bytes, encoding: str, budget: PageBudget, min_links: int | None, url: str,
           canonical: LinkCanonicalizer, content: tuple[bool, int, bool] | None = None) -> ParsedPage:
    """Everything later stages read of a page, read here, in the thread or the helper, not on
    the reactor (its text decoded as Scrapy's ``response.text`` decodes it, its links canonical
    too); then the tree goes (:meth:`ParsedPage.release`), since the page may wait a while for
    them. ``content`` (``CONTENT_MARKDOWN``, ``CONTENT_MAX_CHARS``, whether the body is a
    browser's DOM): the page's content is extracted in the same trip, with the nesting measured
    here (one trip, one measure, one pickling of a large page instead of two)."""
    page = ParsedPage(html_to_unicode(f"charset={encoding}", body)[1], budget)
    # What the render decision will read past the links (a large page's visible text held the
    # reactor up to 200 ms): its scripts on every page (whether to sample a render; read after
    # the tree went, they parsed the page again on the reactor: 5% of its time in a polite
    # crawl), the rest only on pages with fewer links than settle it.
    page.scripts  # noqa: B018
    if min_links is not None and page.anchor_count < min_links:
        page.visible_text_chars, page.text_pieces(SHELL_TEXTS + 1)  # noqa: B018
    page.release()
    resolve_links(page, url, canonical)
    if content is not None:
        markdown, max_chars, rendered = content
        page.content = extract_content(body, encoding, url, budget, rendered, markdown, max_chars, page.nesting)
    return page


class PageParseMiddleware:
    """Parses HTML responses (of ``PAGE_THREAD_MIN_BYTES`` or more) in a page thread, so that no
    page holds the reactor; with ``CONTENT_ENABLED``, a 2xx page's content is extracted in the
    same trip (the content stage reads it: one trip, one measure of the page's nesting), except
    while the crawl closes.

    The spider and the render decision then read the same parse (``parsed_page``). Past
    ``PAGE_STAGE_TIMEOUT``, the page is parsed again without its content
    (``budget/timeout/parse_and_content``), so that its links are not lost with it.
    Sits just above the render decision, so its ``process_response`` runs first."""

    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.crawler = crawler
        self.workers = PageWorkers.of(crawler)
        self.budget = page_budget(crawler.settings)
        self.canonical = link_canonicalizer(crawler.settings)  # the spider's own (its memo shared)
        # RENDER_MIN_LINKS when the render decision judges pages (auto mode), else None.
        auto = crawler.settings.get("RENDER_MODE") == "auto"
        self.min_links = crawler.settings.getint("RENDER_MIN_LINKS") if auto else None
        s = crawler.settings
        # The content stage's options when it runs (CONTENT_ENABLED): the page's content is then
        # extracted in the same trip as its parse.
        self.content = (s.getbool("CONTENT_MARKDOWN"), s.getint("CONTENT_MAX_CHARS")) if s.getbool("CONTENT_ENABLED") else None
        crawler.signals.connect(self.backlog_test, signal=crawl_signals.fetch_backlog_test)

    def backlog_test(self) -> Any:
        """The page threads' ``busy`` (answers :data:`crawlproj.signals.fetch_backlog_test`)."""
        return self.workers.busy if self.workers.enabled and (self.workers.backlog or self.workers.backlog_bytes) else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageParseMiddleware:
        return cls(crawler)

    async def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        if (not isinstance(response, TextResponse) or not self.workers.wants(len(response.body))
                or content_family(response.headers.get(b"Content-Type"), response.body) != "html"):
            return response
        # The content stage reads a 2xx page's content from its parse (ContentPipeline).
        # (A rendered page comes back through here: its content is read as a rendered DOM's.) Not
        # while the crawl closes: the pages fetched then are mostly dropped past CLOSE_GRACE, and
        # the content stage extracts the content of those stored (a link farm's pages queued in
        # the helper held a close 8 s on a slow machine).
        content = (*self.content, "playwright" in response.flags) if (
            self.content and 200 <= response.status < 300 and not engine_closing(self.crawler)) else None
        page = await self._parse(response, content)
        if page is None and content is not None:
            # The parse alone, then, so that the page's links are not lost with its content (the
            # content stage then tries the content on its own, as it does a rendered page's).
            self.stats.inc_value("budget/timeout/parse_and_content")
            page = await self._parse(response, None)
        if page is None:
            self.stats.inc_value("budget/timeout/parse")
            page = ParsedPage.unparsed("timeout")
        adopt_parsed_page(response, page)
        return response

    async def _parse(self, response: TextResponse, content: tuple[bool, int, bool] | None) -> ParsedPage | None:
        """The page parsed (with its ``content``) in a page thread or the helper process; None
        past ``PAGE_STAGE_TIMEOUT``."""
        try:
            # A page of PAGE_PROCESS_MIN_BYTES or more goes to the helper process: on the other
            # core, and out of the page thread's queue (Node.js's 8 MB all.html took 0.8 s there,
            # and every host waited behind it).
            page = await self.workers.run(_parse, response.body, response.encoding, self.budget, self.min_links,
                                          response.url, self.canonical, content, size=len(response.body))
        except StageTimeout as exc:
            logger.warning("parsing %s%s gave up: %s", response.url, " with its content" if content else "", exc)
            return None
        self.stats.inc_value("budget/parsed_in_thread")
        return page
