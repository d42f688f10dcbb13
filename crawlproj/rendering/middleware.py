"""Which requests are rendered: the downloader-middleware adapter of :mod:`.detect` and :mod:`.hosts`."""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response, TextResponse
from scrapy.utils.httpobj import urlparse_cached
from w3lib.encoding import html_to_unicode

from .. import signals as crawl_signals
from ..content.extract import is_html, page_budget, parsed_page
from ..content.main_text import extract_main_text
from ..content.page import ParsedPage
from .detect import Verdict, needs_rendering
from .hosts import Comparison, HostRenderEvidence

logger = logging.getLogger(__name__)

#: Request meta that belongs to one download, not to the page: a render starts afresh.
_PER_DOWNLOAD_META = ("download_latency", "download_slot", "retry_times", "render_server_seconds", "render_server_done",
                      "render_document", "render_static_document", "playwright_page", "playwright_context")
#: Static HTML larger than this is a real page, not an application shell.
_SHELL_MAX_BYTES = 2 * 1024 * 1024
#: A page queued to be rendered carries its static document up to this size (it waits in the
#: frontier with it), so the render does not fetch it again; a larger one is fetched again.
_DOCUMENT_REUSE_MAX_BYTES = 512 * 1024


class RenderDecisionMiddleware:
    """Sends to the browser the pages that need it, decided per page by a rule and per host
    by evidence.

    ``RENDER_MODE``: ``auto`` (the default) fetches each page statically and judges the
    HTML (:func:`~.detect.needs_rendering`); a page that needs JavaScript is queued again,
    through the frontier, to be rendered, and its static response is dropped. Each host's
    mode (:class:`~.hosts.HostRenderEvidence`) is learnt from pages seen both ways: every
    render (the browser's document fetch is the static HTML), and a sample of the pages
    judged static, rendered as evidence through the frontier (kept only when rendering
    showed more). A host whose pages the rule misses is rendered directly; one where it
    over-reaches is left static. ``always`` renders every page; ``never`` none.
    robots.txt, sitemaps, the browser's own sub-requests and requests with
    ``meta["render"] = False`` are never rendered.

    Stats: ``render/static_pages`` (judged and not rendered), ``render/needed/<reason>``,
    ``render/rendered`` (rendered pages passed on), ``render/rendered_by/<why>``,
    ``render/samples``, ``render/sample_gains``, ``render/evidence/<figure>``,
    ``render/hosts_to_<mode>`` and ``render/host_mode/<host>`` for each host that switched.
    Each host's evidence goes to the store's ``render_hosts`` table
    (:data:`crawlproj.signals.render_evidence`) and to the dashboard.
    """

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.mode = s.get("RENDER_MODE")
        if self.mode == "never":
            raise NotConfigured
        self.crawler = crawler
        self.stats = crawler.stats
        self.min_text = s.getint("RENDER_MIN_TEXT")
        self.min_links = s.getint("RENDER_MIN_LINKS")
        # A render shows more when it adds a quarter of "little text" to the main text (and a quarter).
        self.evidence = HostRenderEvidence(s.getint("RENDER_HOST_SWITCH"), s.getint("RENDER_SAMPLE_FIRST"),
                                           self.min_text // 4)
        self.budget = page_budget(s)
        crawler.signals.connect(self.describe_hosts, signal=crawl_signals.describe_hosts)

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
        elif self.evidence.mode(urlparse_cached(request).hostname or "") == "render":
            request.meta.update(playwright=True, render_reason="host")
        return None

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response | Request:
        if self._exempt(request):
            return response
        host = urlparse_cached(request).hostname or ""
        if request.meta.get("playwright"):
            return self._rendered(host, request, response)
        if self.mode != "auto" or not 200 <= response.status < 300:
            return response
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        if not is_html(content_type) or len(response.body) > _SHELL_MAX_BYTES or not isinstance(response, TextResponse):
            return response
        page = parsed_page(response, self.budget)  # the parse the spider reads too
        if page.over_budget == "timeout":
            return response  # given up on in the page thread: there is nothing to judge it by
        verdict = self.judge(page)
        self._switched(host, self.evidence.judged(host, verdict.needs))
        if verdict.needs and (self.evidence.mode(host) != "static" or self.evidence.sample(host, True)):
            for reason in verdict.reasons:
                self.stats.inc_value(f"render/needed/{reason}")
            # Back through the frontier: the render waits for the host's politeness like any fetch.
            return self._render_again(request, response, verdict.reasons[0], verdict)
        self.stats.inc_value("render/static_pages")
        # Evidence: a page that loads script rendered too, through the frontier; its render is
        # kept only if it shows more (a page without script cannot change).
        if not verdict.needs and page.scripts and self.evidence.sample(host, False):
            sample = self._render_again(request, response, "sample", verdict)
            self.crawler.engine.crawl(sample.replace(errback=None))
        return response

    def _render_again(self, request: Request, response: TextResponse, reason: str, verdict: Verdict) -> Request:
        meta = {k: v for k, v in request.meta.items() if k not in _PER_DOWNLOAD_META}
        # What the static page showed, for the comparison with its render.
        static = (verdict.links, self._main_chars(response.body, response.encoding))
        meta.update(playwright=True, render_reason=reason, render_static=static, render_judged=verdict.needs)
        if len(response.body) <= _DOCUMENT_REUSE_MAX_BYTES:
            # The browser is handed the document already fetched instead of asking the server again.
            meta["render_static_document"] = (response.status, dict(response.headers), response.body)
        self.crawler.signals.send_catch_log(crawl_signals.render_queued)
        return request.replace(url=response.url, meta=meta, dont_filter=True)

    def _rendered(self, host: str, request: Request, response: Response) -> Response:
        reason = request.meta.get("render_reason", "request")
        document = request.meta.pop("render_document", None)
        comparison = None
        if self.mode == "auto" and isinstance(response, TextResponse):
            static = request.meta.get("render_static")
            judged = request.meta.get("render_judged")
            if static is None and document is not None and is_html(document[1]):
                encoding, text = html_to_unicode(document[1] or None, document[0])
                verdict = self.judge(ParsedPage(text, self.budget))
                static, judged = (verdict.links, self._main_chars(document[0], encoding)), verdict.needs
            if static is not None:
                rendered = parsed_page(response, self.budget)
                comparison = Comparison(static[0], static[1], rendered.anchor_count,
                                        self._main_chars(response.body, response.encoding))
                self._learn(host, bool(judged), comparison)
        if reason == "sample":
            self.stats.inc_value("render/samples")
            if comparison is None or not comparison.gain(self.evidence.min_more):
                raise IgnoreRequest("render sample: the static page already showed it")
            self.stats.inc_value("render/sample_gains")  # the rendered page replaces the static one
        self.stats.inc_value("render/rendered")
        self.stats.inc_value(f"render/rendered_by/{reason}")
        return response

    def _main_chars(self, body: bytes, encoding: str | None) -> int:
        """Characters of a page's main text: what a render must add to, not the navigation a
        script may build around it (a Doxygen nav tree adds 45-123 links to any page)."""
        return len(extract_main_text(body, encoding, self.budget).text)

    def judge(self, page: ParsedPage) -> Verdict:
        return needs_rendering(page, self.min_text, self.min_links)

    def _learn(self, host: str, judged: bool, comparison: Comparison) -> None:
        switched = self.evidence.record(host, judged, comparison)
        for figure, value in self.evidence.totals.items():
            self.stats.set_value(f"render/evidence/{figure}", value)
        if switched is None:
            self._publish(host)
        else:
            self._switched(host, switched)

    def _publish(self, host: str) -> None:
        """The host's evidence row, for the store (and so the report)."""
        self.crawler.signals.send_catch_log(crawl_signals.render_evidence, host=host, row=self.evidence.hosts[host].row())

    def _switched(self, host: str, mode: str | None) -> None:
        if mode is None:
            return
        self._publish(host)
        self.stats.inc_value(f"render/hosts_to_{mode}")
        self.stats.set_value(f"render/host_mode/{host}", mode)
        self.stats.set_value("render/hosts_direct", self.evidence.modes()["render"])
        logger.info("host %s: rendering mode %s (%s)", host, mode, self.evidence.hosts[host].reason)

    def describe_hosts(self, hosts: list[str]) -> dict[str, dict]:
        """Each host's rendering mode and its evidence, for the dashboard."""
        return {h: {"render": self.evidence.hosts[h].row()} for h in hosts if h in self.evidence.hosts}
