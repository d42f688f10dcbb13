"""``scrapy crawl site -a url=...``: a scoped crawl of one site."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider
from scrapy.http import Response

from ..errors import BadInput
from ..items import PageItem
from ..scope import Scope
from ..urls import InvalidURL, canonicalize
from .arguments import sitemap_arg
from .base import PageSpider


def _required_url(url: str | None, sitemap: str | None = None) -> str:
    """The start URL: ``-a url=``, else the root of the first ``-a sitemap=``'s site."""
    if not url and sitemap:
        parts = urlsplit(str(sitemap).split(",")[0].strip())
        if parts.scheme and parts.netloc:
            return f"{parts.scheme}://{parts.netloc}/"
    if not url:
        raise BadInput("the site spider needs -a url=https://host/path/ (or -a sitemap=https://host/sitemap.xml)")
    return url


def _max_pages(value: str | int | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        raise BadInput(f"-a max_pages={value!r}: expected a whole number") from None


def _start_url(url: str, session_params: tuple[str, ...], max_length: int) -> str:
    try:  # not spider.canonical(): it counts refusals, and the crawl's stats do not exist yet
        return canonicalize(url, session_params=session_params, max_length=max_length)
    except InvalidURL as exc:
        raise BadInput(f"-a url={url!r} is not a crawlable http(s) URL ({exc.reason})") from None


class SiteSpider(PageSpider):
    """Crawls one site: the start URL's scheme, host and port, under its path prefix.

    ``-a url=https://example.org/docs/`` stays under ``/docs/``; ``-a allow=REGEX``
    and ``-a deny=REGEX`` filter URLs; ``-a max_pages=N`` stops after N stored pages.
    ``-a sitemap=URL[,URL...]`` reads sitemaps as well (without ``-a url=``, the crawl is
    of the first sitemap's whole site).
    """

    name = "site"
    ARGUMENTS = ("url", "allow", "deny", "max_pages", *PageSpider.ARGUMENTS)

    def __init__(self, url: str | None = None, allow: str | None = None, deny: str | None = None,
                 max_pages: str | int | None = None, sitemap: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.sitemap = sitemap
        self.start_url_arg = _required_url(url, sitemap)
        self._allow, self._deny = allow, deny
        self.max_pages = _max_pages(max_pages)
        self.pages = 0

    @classmethod
    def check_input(cls, settings: Any, url: str | None = None, max_pages: str | None = None,
                    sitemap: str | None = None, **_: Any) -> None:
        """Refuse bad arguments before the crawl starts (:class:`~crawlproj.errors.BadInput`)."""
        _max_pages(max_pages)
        params, max_length = tuple(settings.getlist("SESSION_ID_PARAMS")), settings.getint("URL_MAX_LENGTH")
        sitemap_arg(sitemap, params, max_length)
        _start_url(_required_url(url, sitemap), params, max_length)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SiteSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider._init_from_settings()
        url = _start_url(spider.start_url_arg, spider.session_params, spider.max_url_length)
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
        for request in self.start_sitemaps():
            yield request
        yield self.request(self.start_url)

    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        if self.max_pages is not None and self.pages >= self.max_pages:
            return
        async for out in super().parse(response, **kwargs):
            if isinstance(out, PageItem):
                self.pages += 1
                yield out
                if self.max_pages is not None and self.pages >= self.max_pages:
                    raise CloseSpider("max_pages")
            else:
                yield out

