"""Scrapy's downloader, announcing when each fetch is over, whatever its outcome."""

from __future__ import annotations

from typing import Any

from scrapy import Request, Spider
from scrapy.core.downloader import Downloader
from twisted.internet.defer import Deferred

from .. import signals as crawl_signals


class FrontierDownloader(Downloader):
    """Sends :data:`crawlproj.signals.fetch_finished` when a fetch ends.

    ``fetch`` is where every request the engine sends meets every outcome:
    a response, a failure, a drop by a middleware (robots.txt) or a new request
    from one (redirect, retry). The frontier releases the request's host on it.
    """

    def fetch(self, request: Request, spider: Spider | None = None) -> Deferred[Any]:  # type: ignore[override]
        d = super().fetch(request)

        def finished(result: Any) -> Any:
            self.crawler.signals.send_catch_log(crawl_signals.fetch_finished, request=request, result=result)
            return result

        return d.addBoth(finished)
