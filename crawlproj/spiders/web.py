"""``scrapy crawl web``: the broad crawl from seed lists."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

from scrapy.crawler import Crawler

from ..scope import Scope
from ..config import BadInput
from .base import CrawlSpiderBase, read_seed_lines, sitemap_arg


def _seed_paths(files: str | None) -> list[str]:
    """``FILE[,FILE...]`` as paths."""
    return [p for p in (p.strip() for p in str(files or "").split(",")) if p]


class WebSpider(CrawlSpiderBase):
    """Broad crawl. ``-a seeds=FILE[,FILE...]`` (default: the ``SEEDS_FILE`` setting);
    ``-a sitemap=URL[,URL...]`` reads sitemaps (or sitemap indexes) as well.

    Scope comes from ``ALLOWED_DOMAINS``, ``ALLOWED_SUFFIXES`` and ``DEPTH_LIMIT``;
    ``-a allow=REGEX`` and ``-a deny=REGEX`` narrow it further.
    """

    name = "web"

    def __init__(self, seeds: str | None = None, allow: str | None = None, deny: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.seed_files = seeds
        self._allow, self._deny = allow, deny

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> WebSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider._init_from_settings()
        s = crawler.settings
        spider.seed_files = spider.seed_files or s.get("SEEDS_FILE")
        spider.scope = Scope(
            domains=tuple(s.getlist("ALLOWED_DOMAINS")),
            suffixes=tuple(s.getlist("ALLOWED_SUFFIXES")),
            allow=re.compile(spider._allow) if spider._allow else None,
            deny=re.compile(spider._deny) if spider._deny else None,
        )
        return spider

    @classmethod
    def check_input(cls, settings: Any, seeds: str | None = None, sitemap: str | None = None, **_: Any) -> None:
        """Refuse a seeds file that cannot be read, or a sitemap URL that is not one, before the
        crawl starts (a line that is not UTF-8 is skipped and counted when the seeds are read)."""
        sitemap_arg(sitemap, tuple(settings.getlist("SESSION_ID_PARAMS")), settings.getint("URL_MAX_LENGTH"))
        for path in _seed_paths(seeds or settings.get("SEEDS_FILE")):
            try:
                with open(path, "rb") as fh:
                    fh.read(1)
            except OSError as exc:
                raise BadInput(f"seeds file {path}: {exc.strerror or exc}") from None

    def seed_urls(self) -> list[str]:
        urls = []
        for path in _seed_paths(self.seed_files):
            with open(path, "rb") as fh:
                for number, raw in read_seed_lines(fh):
                    if raw is None:
                        self.count("seeds_not_utf8")
                        self.logger.warning("%s:%d: not UTF-8, skipped", path, number)
                        continue
                    url = self.canonical(raw)
                    if url is None:
                        self.logger.warning("%s:%d: not a crawlable URL: %r", path, number, raw)
                    else:
                        urls.append(url)
        self.count("seeds", len(urls))
        return urls

    async def start(self) -> AsyncIterator[Any]:
        for request in self.start_sitemaps():
            yield request
        for url in self.seed_urls():
            yield self.request(url)
