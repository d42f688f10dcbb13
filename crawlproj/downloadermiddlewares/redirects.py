"""Redirects that come back: a loop is a named outcome, not a silent drop.

Scrapy's redirect middlewares hand the redirected request back to the scheduler, and the
URL-seen filter drops a URL already seen. So a loop (A -> B -> A, or a meta refresh to
itself) left no page and no error: ``REDIRECT_MAX_TIMES`` only ended chains that never
repeat. These subclasses end a chain at the first URL it has already visited, with
``IgnoreRequest("redirect loop ...")``, which the spider stores as a ``redirect_loop``
fetch error.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware, RedirectMiddleware
from scrapy.exceptions import IgnoreRequest

from ..urls import InvalidURL, canonicalize

LOOP = "redirect loop"


def _canonical(url: str) -> str:
    try:
        return canonicalize(url)
    except InvalidURL:
        return url


def check_loop(redirected: Request, request: Request) -> None:
    """Raise IgnoreRequest when ``redirected`` goes back to a URL of its own chain (pure logic)."""
    chain = {_canonical(u) for u in (*request.meta.get("redirect_urls", ()), request.url)}
    if _canonical(redirected.url) in chain:
        raise IgnoreRequest(f"{LOOP}: {redirected.url} again after {len(chain)} URL(s)")


class _RefererAsConfigured:
    """Scrapy warns, at every start, that redirects lose their Referer when its Referer middleware
    is off; with ``REFERER_ENABLED`` off (the distributed profile and WORKERS send none) that is
    what the crawl asked for, and every worker said so for nothing."""

    def _engine_started(self) -> None:
        if self.crawler.settings.getbool("REFERER_ENABLED"):
            super()._engine_started()


class LoopAwareRedirectMiddleware(_RefererAsConfigured, RedirectMiddleware):
    """Scrapy's 3xx redirects, ending a loop as ``redirect_loop``."""

    def _redirect(self, redirected: Request, request: Request, reason: Any) -> Request:
        check_loop(redirected, request)
        return super()._redirect(redirected, request, reason)


class LoopAwareMetaRefreshMiddleware(_RefererAsConfigured, MetaRefreshMiddleware):
    """Scrapy's ``<meta http-equiv=refresh>`` redirects, ending a loop as ``redirect_loop``."""

    def _redirect(self, redirected: Request, request: Request, reason: Any) -> Request:
        check_loop(redirected, request)
        return super()._redirect(redirected, request, reason)
