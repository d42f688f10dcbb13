"""Which requests are rendered: the downloader-middleware adapter of :mod:`.detect` and :mod:`.hosts`."""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached
from scrapy.http import TextResponse
from w3lib.encoding import html_to_unicode

from ..content.extract import is_html, page_budget, parsed_page
from ..content.page import ParsedPage
from .detect import Verdict, needs_rendering
from .hosts import HostRenderMemory

logger = logging.getLogger(__name__)

#: Request meta that belongs to one download, not to the page: a render starts afresh.
_PER_DOWNLOAD_META = ("download_latency", "download_slot", "retry_times", "render_server_seconds",
                      "render_document", "playwright_page", "playwright_context")
#: Static HTML larger than this is a real page, not an application shell.
_SHELL_MAX_BYTES = 2 * 1024 * 1024


class RenderDecisionMiddleware:
    """Sends to the browser only the pages that need it.

    ``RENDER_MODE``: ``auto`` (the default) fetches each page statically and judges
    the HTML (:func:`~.detect.needs_rendering`); a page that needs JavaScript is
    queued again, through the frontier, to be rendered, and its static response is
    dropped. A host whose pages keep needing it is rendered directly, and back
    (:class:`~.hosts.HostRenderMemory`, ``RENDER_HOST_SWITCH``). ``always`` renders
    every page; ``never`` none. robots.txt, sitemaps, the browser's own sub-requests
    and requests with ``meta["render"] = False`` are never rendered.

    Stats: ``render/static_pages`` (judged and not rendered), ``render/needed/<rule>``,
    ``render/rendered``, ``render/rendered_by/<why>`` and ``render/hosts_to_<mode>``.
    """

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.mode = s.get("RENDER_MODE")
        if self.mode == "never":
            raise NotConfigured
        self.stats = crawler.stats
        self.memory = HostRenderMemory(s.getint("RENDER_HOST_SWITCH"))
        self.min_text = s.getint("RENDER_MIN_TEXT")
        self.min_links = s.getint("RENDER_MIN_LINKS")
        self.script_ratio = s.getfloat("RENDER_SCRIPT_RATIO")
        self.budget = page_budget(s)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderDecisionMiddleware:
        return cls(crawler)

    @staticmethod
    def _exempt(request: Request) -> bool:
        meta = request.meta
        return (meta.get("render") is False or meta.get("render_subrequest", False)
                or urlparse_cached(request).path == "/robots.txt")

    def process_request(self, request: Request, spider: Any = None) -> None:
        if self._exempt(request) or request.meta.get("playwright"):
            return None
        if self.mode == "always":
            request.meta.update(playwright=True, render_reason="always")
        elif self.memory.direct(urlparse_cached(request).hostname or ""):
            request.meta.update(playwright=True, render_reason="host")
        return None

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response | Request:
        if self._exempt(request):
            return response
        host = urlparse_cached(request).hostname or ""
        if request.meta.get("playwright"):
            self.stats.inc_value("render/rendered")
            self.stats.inc_value(f"render/rendered_by/{request.meta.get('render_reason', 'request')}")
            document = request.meta.pop("render_document", None)
            if self.mode == "auto" and document is not None and is_html(document[1]):
                _, text = html_to_unicode(document[1] or None, document[0])
                self._learn(host, self.judge(ParsedPage(text, self.budget)))
            return response
        if self.mode != "auto" or not 200 <= response.status < 300:
            return response
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        if not is_html(content_type) or len(response.body) > _SHELL_MAX_BYTES or not isinstance(response, TextResponse):
            return response
        page = parsed_page(response, self.budget)  # the parse the spider reads too
        if page.over_budget == "timeout":
            return response  # given up on in the page thread: there is nothing to judge it by
        verdict = self.judge(page)
        self._learn(host, verdict)
        if not verdict.needs:
            self.stats.inc_value("render/static_pages")
            return response
        for reason in verdict.reasons:
            self.stats.inc_value(f"render/needed/{reason}")
        meta = {k: v for k, v in request.meta.items() if k not in _PER_DOWNLOAD_META}
        meta.update(playwright=True, render_reason=verdict.reasons[0])
        # Back through the frontier: the render waits for the host's politeness like any fetch.
        return request.replace(url=response.url, meta=meta, dont_filter=True)

    def judge(self, page: ParsedPage) -> Verdict:
        return needs_rendering(page, self.min_text, self.min_links, self.script_ratio)

    def _learn(self, host: str, verdict: Verdict) -> None:
        switched = self.memory.record(host, verdict.needs)
        if switched:
            self.stats.inc_value(f"render/hosts_to_{switched}")
            self.stats.set_value("render/hosts_direct", self.memory.direct_hosts)
            logger.info("host %s: pages now fetched %s", host,
                        "rendered directly" if switched == "direct" else "statically first")
