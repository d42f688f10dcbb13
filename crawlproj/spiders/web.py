"""``scrapy crawl web``: the broad crawl from seed lists."""

from __future__ import annotations

import importlib.resources
import os
import re
from collections.abc import AsyncIterator
from typing import Any

from scrapy.crawler import Crawler

from ..errors import BadInput
from ..scope import Scope
from ..urls import InvalidURL, canonicalize
from .arguments import read_seed_lines, sitemap_arg
from .base import PageSpider


def _seed_paths(files: str | None) -> list[str]:
    """``FILE[,FILE...]`` as paths."""
    return [p for p in (p.strip() for p in str(files or "").split(",")) if p]


def read_seeds_file(path: str) -> bytes:
    """A seeds file's bytes. ``seeds/<name>`` missing from the working folder (a Scrapyd job runs
    in one of its own) is read from the ``seeds`` package the egg carries; OSError otherwise."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        parts = os.path.normpath(path).split(os.sep)
        if len(parts) == 2 and parts[0] == "seeds":
            packaged = importlib.resources.files("seeds").joinpath(parts[1])
            if packaged.is_file():
                return packaged.read_bytes()
        raise


class WebSpider(PageSpider):
    """Broad crawl. ``-a seeds=FILE[,FILE...]`` (default: the ``SEEDS_FILE`` setting);
    ``-a sitemap=URL[,URL...]`` reads sitemaps (or sitemap indexes) as well.

    Scope comes from ``ALLOWED_DOMAINS``, ``ALLOWED_SUFFIXES`` and ``DEPTH_LIMIT``;
    ``-a allow=REGEX`` and ``-a deny=REGEX`` narrow it further.
    """

    name = "web"
    ARGUMENTS = ("seeds", "allow", "deny", *PageSpider.ARGUMENTS)

    def __init__(self, seeds: str | None = None, allow: str | None = None, deny: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.seed_files = seeds
        self._allow, self._deny = allow, deny

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> WebSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        s = spider._init_from_settings()
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
        session, max_length = tuple(settings.getlist("SESSION_ID_PARAMS")), settings.getint("URL_MAX_LENGTH")
        sitemaps = sitemap_arg(sitemap, session, max_length)
        paths, crawlable, first_bad = _seed_paths(seeds or settings.get("SEEDS_FILE")), 0, None
        for path in paths:
            try:
                lines = read_seeds_file(path).splitlines()
            except OSError as exc:
                raise BadInput(f"seeds file {path}: {exc.strerror or exc}") from None
            for number, raw in read_seed_lines(lines):
                try:
                    canonicalize(raw or "", session_params=session, max_length=max_length)
                    crawlable += 1
                except InvalidURL as exc:
                    first_bad = first_bad or f"{path}:{number}: {exc}"
        # A distributed worker may start with nothing: its seeds come through Redis (scrapy seed).
        if paths and not crawlable and not sitemaps and "Distributed" not in str(settings.get("SCHEDULER")):
            raise BadInput(f"seeds file {','.join(paths)}: no crawlable URL in it"
                           + (f" (the first line that is not one: {first_bad})" if first_bad else " (it is empty)"))

    def seed_urls(self) -> list[str]:
        urls = []
        for path in _seed_paths(self.seed_files):
            for number, raw in read_seed_lines(read_seeds_file(path).splitlines()):
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
