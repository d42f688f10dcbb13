"""The content item pipeline: each stored page's text, Markdown and metadata (the Scrapy adapter
of :mod:`crawlproj.content.extraction`)."""

from __future__ import annotations

import logging

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from ..items import PageItem
from .extract import page_budget
from .extraction import extract_content
from .offload import PageWorkers, StageTimeout
from ..items import PageContent
from .types import content_family

logger = logging.getLogger(__name__)


def document_content(document, markdown: bool = True, max_chars: int = 0) -> PageContent:  # noqa: ANN001
    """The content of a document that is not HTML, as read: a PDF's text (pages apart as
    paragraphs), a feed's entries (a line each; in Markdown, a list of links)."""
    if document.kind == "feed":
        titles = document.text.split("\n") if document.text else []
        text = "\n".join(t for t in titles if t)
        md = "\n".join(f"- [{title or entry.loc}]({entry.loc})" for title, entry in zip(titles, document.entries))
    else:
        text = "\n\n".join(page.strip() for page in document.text.split("\f") if page.strip())
        md = text
    limited = None
    if max_chars and len(text) > max_chars:
        text, md, limited = text[:max_chars], md[:max_chars], "max_chars"
    return PageContent(text=text, markdown=md if markdown else "", title=document.title,
                       language=document.language, author=getattr(document, "author", None), limited=limited)


class ContentPipeline:
    """Sets ``item.content`` (:class:`~crawlproj.items.PageContent`) of every
    page stored with a 2xx status: HTML and rendered pages by :func:`extract_content`, PDFs and
    feeds from what their readers gave.

    An HTML page's content is extracted where it was parsed, in the same trip
    (:class:`~crawlproj.downloadermiddlewares.page_parse.PageParseMiddleware`: a page thread,
    or the helper process from ``PAGE_PROCESS_MIN_BYTES``); a rendered page's, or one whose
    parse ran without it, here, in a page thread or the helper, within ``PAGE_STAGE_TIMEOUT``;
    one that runs past it is stored without content (``content/timeout``). ``CONTENT_MARKDOWN``
    off leaves the Markdown out; ``CONTENT_MAX_CHARS`` cuts text and Markdown. Counts
    ``content/pages`` and, for text that is less than the page's, ``content/limited/<why>``."""

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        if not s.getbool("CONTENT_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.markdown = s.getbool("CONTENT_MARKDOWN")
        self.max_chars = s.getint("CONTENT_MAX_CHARS")
        self.budget = page_budget(s)
        self.workers = PageWorkers.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentPipeline:
        return cls(crawler)

    async def process_item(self, item: object, spider: Spider | None = None) -> object:
        if not isinstance(item, PageItem) or not item.body or not 200 <= item.status < 300:
            return item
        stats = self.crawler.stats
        if item.content is not None:  # extracted with the page's parse (page_parse)
            content = item.content
        elif item.document is not None:
            content = document_content(item.document, self.markdown, self.max_chars)
        elif content_family(item.content_type, item.body) == "html":
            args = (item.body, item.charset, item.final_url or item.url, self.budget, item.rendered, self.markdown,
                    self.max_chars)
            try:
                if self.workers.wants(len(item.body)):
                    content = await self.workers.run(extract_content, *args, size=len(item.body))
                else:
                    content = extract_content(*args)
            except StageTimeout as exc:
                logger.warning("content of %s gave up: %s", item.url, exc)
                stats.inc_value("content/timeout")
                return item
        else:
            return item
        item.content = content
        item.text_length = len(content.text)
        stats.inc_value("content/pages")
        if content.limited:
            stats.inc_value(f"content/limited/{content.limited}")
        return item
