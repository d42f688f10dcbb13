"""``scrapy crawl site -a url=...``: a scoped crawl of one site."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider
from scrapy.http import Response

from ..items import PageItem
from ..scope import Scope
from ..urls import InvalidURL, canonicalize
from .base import CrawlSpiderBase


class SiteSpider(CrawlSpiderBase):
    """Crawls one site: the start URL's scheme, host and port, under its path prefix.

    ``-a url=https://example.org/docs/`` stays under ``/docs/``; ``-a allow=REGEX``
    and ``-a deny=REGEX`` filter URLs; ``-a max_pages=N`` stops after N stored pages.
    """

    name = "site"

    def __init__(self, url: str | None = None, allow: str | None = None, deny: str | None = None,
                 max_pages: str | int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if not url:
            raise ValueError("the site spider needs -a url=https://host/path/")
        self.start_url_arg = url
        self._allow, self._deny = allow, deny
        try:
            self.max_pages = int(max_pages) if max_pages not in (None, "") else None
        except ValueError:
            raise ValueError(f"-a max_pages={max_pages!r}: expected a whole number") from None
        self.pages = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SiteSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider._init_from_settings()
        try:  # not spider.canonical(): it counts refusals, and the crawl's stats do not exist yet
            url = canonicalize(spider.start_url_arg, session_params=spider.session_params,
                               max_length=spider.max_url_length)
        except InvalidURL as exc:
            raise ValueError(f"-a url={spider.start_url_arg!r} is not a crawlable http(s) URL ({exc.reason})") from None
        parts = urlsplit(url)
        spider.start_url = url
        spider.scope = Scope(
            origin=f"{parts.scheme}://{parts.netloc}",
            prefix=parts.path[: parts.path.rfind("/") + 1] or "/",
            allow=re.compile(spider._allow) if spider._allow else None,
            deny=re.compile(spider._deny) if spider._deny else None,
        )
        return spider

    async def start(self) -> AsyncIterator[Any]:
        yield self.request(self.start_url)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if self.max_pages is not None and self.pages >= self.max_pages:
            return
        for out in super().parse(response, **kwargs):
            if isinstance(out, PageItem):
                self.pages += 1
                yield out
                if self.max_pages is not None and self.pages >= self.max_pages:
                    raise CloseSpider("max_pages")
            else:
                yield out

