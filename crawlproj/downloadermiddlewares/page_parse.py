"""HTML pages parsed in a page thread (a downloader middleware), so that no page holds the
reactor; the threads and the helper process are :class:`crawlproj.content.offload.PageWorkers`."""

from __future__ import annotations

import logging
from typing import Any

from scrapy.crawler import Crawler
from scrapy.http import Request, Response, TextResponse

from .. import signals as crawl_signals
from ..content.budget import PageBudget
from ..content.extract import adopt_parsed_page, link_canonicalizer, page_budget, resolve_links
from ..content.offload import PageWorkers, StageTimeout
from ..content.page import SHELL_TEXTS, ParsedPage
from ..content.types import content_family
from ..urls import LinkCanonicalizer

logger = logging.getLogger(__name__)


def _parse(text: str, budget: PageBudget, min_links: int | None, url: str, canonical: LinkCanonicalizer) -> ParsedPage:
    """Everything later stages read of a page, read here, in the thread, not on the reactor (its
    links canonical too); then the tree goes (:meth:`ParsedPage.release`), since the page may
    wait a while for them."""
    page = ParsedPage(text, budget)
    # What the render decision will read past the links (a large page's visible text held the
    # reactor up to 200 ms): its scripts on every page (whether to sample a render; read after
    # the tree went, they parsed the page again on the reactor: 5% of its time in a polite
    # crawl), the rest only on pages with fewer links than settle it.
    page.scripts  # noqa: B018
    if min_links is not None and page.anchor_count < min_links:
        page.visible_text_chars, page.text_pieces(SHELL_TEXTS + 1)  # noqa: B018
    page.release()
    resolve_links(page, url, canonical)
    return page


class PageParseMiddleware:
    """Parses HTML responses (of ``PAGE_THREAD_MIN_BYTES`` or more) in a page thread, so that no
    page holds the reactor.

    The spider and the render decision then read the same parse (``parsed_page``).
    Sits just above the render decision, so its ``process_response`` runs first."""

    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.workers = PageWorkers.of(crawler)
        self.budget = page_budget(crawler.settings)
        self.canonical = link_canonicalizer(crawler.settings)  # the spider's own (its memo shared)
        # RENDER_MIN_LINKS when the render decision judges pages (auto mode), else None.
        auto = crawler.settings.get("RENDER_MODE") == "auto"
        self.min_links = crawler.settings.getint("RENDER_MIN_LINKS") if auto else None
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
        text = response.text  # decoded here: the thread only parses
        try:
            # A page of PAGE_PROCESS_MIN_BYTES or more goes to the helper process: on the other
            # core, and out of the page thread's queue (Node.js's 8 MB all.html took 0.8 s there,
            # and every host waited behind it).
            page = await self.workers.run(_parse, text, self.budget, self.min_links, response.url, self.canonical,
                                          size=len(response.body))
            self.stats.inc_value("budget/parsed_in_thread")
        except StageTimeout as exc:
            logger.warning("parsing %s gave up: %s", response.url, exc)
            self.stats.inc_value("budget/timeout/parse")
            page = ParsedPage.unparsed("timeout")
        adopt_parsed_page(response, page)
        return response
