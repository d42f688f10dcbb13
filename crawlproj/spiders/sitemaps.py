"""The spiders' sitemaps: ``-a sitemap=`` and robots.txt's ``Sitemap:`` lines read, their URLs in
scope requested and all of them, with their ``lastmod``, handed to the pipelines."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import scrapy
from scrapy.http import Response

from ..content.offload import PageWorkers, StageTimeout
from ..content.sitemaps import read_sitemap
from ..extensions.stalls import TurnTaker
from ..items import SitemapUrls, Skipped
from .arguments import sitemap_arg


class SitemapCallbacks:
    """The page spider's part for sitemaps; its callbacks are the spider's, so that a request's
    callback is found by name in a journal or a shared queue."""

    def start_sitemaps(self) -> list[scrapy.Request]:
        """Requests for the sitemaps ``-a sitemap=`` names."""
        return [self.sitemap_request(url) for url in sitemap_arg(self.sitemap, self.session_params, self.max_url_length)]

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
        seen = self.links.url_seen()
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
