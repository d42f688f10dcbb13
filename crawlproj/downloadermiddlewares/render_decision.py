"""Which requests are rendered: the downloader-middleware adapter of :mod:`.detect` and :mod:`.hosts`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import Response, TextResponse
from scrapy.utils.httpobj import urlparse_cached
from w3lib.encoding import html_to_unicode

from .. import signals as crawl_signals
from ..content.extract import is_html, page_budget, parsed_page
from ..content.main_text import extract_main_text
from ..content.offload import PageWorkers
from ..content.page import ParsedPage
from ..engine_state import engine_closing
from ..rendering.detect import Verdict, needs_rendering
from ..rendering.hosts import Comparison, HostRenderEvidence

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: Request meta that belongs to one download, not to the page: a render starts afresh.
_PER_DOWNLOAD_META = ("download_latency", "download_slot", "retry_times", "render_server_seconds", "render_server_done",
                      "render_document", "render_static_document", "playwright_page", "playwright_context")
#: Static HTML larger than this is a real page, not an application shell.
_SHELL_MAX_BYTES = 2 * 1024 * 1024
#: A page queued to be rendered carries its static document up to this size (it waits in the
#: frontier with it), so the render does not fetch it again; a larger one is fetched again.
_DOCUMENT_REUSE_MAX_BYTES = 512 * 1024
#: Downloader slot of the renders that do not ask the server (offline evidence samples).
_OFFLINE_SLOT = "render:offline"
#: Offline samples rendered at once, the rest waiting their turn: evidence is not urgent, and
#: renders compete with the crawl for the CPU (four at once cost a CPU-bound crawl of two
#: workers a quarter of its pages).
_OFFLINE_AT_ONCE = 1
#: Offline samples waiting their turn, at most, and the bytes of the static documents they
#: carry (any page the rule judges, up to _SHELL_MAX_BYTES: a larger page's sample rendered
#: through the frontier fetched it again and held its host for seconds): a broad crawl meets
#: new hosts, each with its first samples, faster than one render at a time judges them.
#: Past either a sample is dropped (``render/samples_dropped``): evidence, not a page, is lost.
_OFFLINE_WAITING_MAX = 16
_OFFLINE_WAITING_BYTES = 16 * _DOCUMENT_REUSE_MAX_BYTES
#: An offline sample's misses are fetched at most this many times (a script loads another)...
_PREFETCH_ROUNDS = 3
#: ...and while what it carries through the frontier stays below this.
_PREFETCH_MAX_BYTES = 4 * 2**20
#: A host's prefetch, or its sample rendered through the frontier, not back after this many
#: seconds is taken as lost (another worker of a distributed crawl took it, say): the next
#: one goes.
_PATIENCE = 120.0


#: What a sample's meta loses between its attempts: the last attempt's download, and its key.
_PER_ATTEMPT_META = frozenset(_PER_DOWNLOAD_META) - {"render_static_document"} | {
    "politeness_key", "render_offline", "render_missed"}


async def _now(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` here, for where there are no page threads."""
    return fn(*args)


def _document_bytes(sample: Request) -> int:
    """The bytes of the static document ``sample`` carries."""
    document = sample.meta.get("render_static_document")
    return len(document[2]) if document else 0


def _per_page(meta: dict, *also: str) -> dict:
    """A sample's ``meta`` for its next attempt (without ``also`` too)."""
    return {k: v for k, v in meta.items() if k not in _PER_ATTEMPT_META and k not in also}


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

    An evidence sample whose document is in hand is rendered offline, beside the
    frontier: from that document and the script cache, asking the server nothing, so
    it does not hold its host's turn for the second or so a render takes. What the
    render needed and the cache lacked is fetched through the frontier as a prefetch
    (one per host at a time; it holds the host for those fetches only, not for a
    render), and the render is tried offline again. After three prefetches it is judged
    with what it has (what it still missed failed). When the render showed more than the
    static page (so the rendered page is kept), or failed, the sample is rendered through
    the frontier as above, with what was prefetched at hand.
    A host has one sample through the frontier at a time; one that falls due meanwhile is
    skipped.
    robots.txt, sitemaps, the browser's own sub-requests and requests with
    ``meta["render"] = False`` are never rendered.

    Stats: ``render/static_pages`` (judged and not rendered), ``render/needed/<reason>``,
    ``render/rendered`` (rendered pages passed on), ``render/rendered_by/<why>``,
    ``render/samples``, ``render/sample_gains``, ``render/samples_offline`` (samples judged
    without the server), ``render/samples_skipped`` (due while the host's sample was under
    way), ``render/prefetches`` (counted by the download handler),
    ``render/offline_retried`` (offline samples rendered through the frontier after all),
    ``render/samples_incomplete`` (judged offline with scripts still missing after the prefetches),
    ``render/evidence/<figure>``,
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
                                           self.min_text // 4, s.getint("RENDER_SAMPLE_GROWTH"),
                                           s.getint("RENDER_EVIDENCE_HOSTS"))
        self.budget = page_budget(s)
        self._offline: set[asyncio.Future] = set()  # offline samples in progress
        self._offline_waiting: deque[Request] = deque()  # offline samples waiting their turn
        self._offline_waiting_bytes = 0  # the static documents they carry
        self.offline_samples = s.getbool("RENDER_SAMPLE_OFFLINE")
        # host -> (since when, samples waiting): one prefetch at a time per host, so samples that
        # miss the same script do not each fetch it.
        self._prefetching: dict[str, tuple[float, list[Request]]] = {}
        # host -> since when: one sample through the frontier at a time per host. Each holds
        # the host for a whole render, and those that fell due together ran back to back: two
        # CPU-bound workers saw a host fetch nothing for 10 s at a time.
        self._sampling: dict[str, float] = {}
        crawler.signals.connect(self.describe_hosts, signal=crawl_signals.describe_hosts)
        crawler.signals.connect(self._close, signal=signals.spider_closed)
        crawler.signals.connect(self._idle, signal=signals.spider_idle)

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
        if request.meta.get("render_prefetch") is not None:  # fetched what its offline render missed: again
            self._prefetched(request)
            self._start_offline(request.replace(meta=_per_page(request.meta, "render_prefetch")))
            self._settled(request)
            raise IgnoreRequest("render sample: prefetched for its offline render")
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
            sample = self._render_again(request, response, "sample", verdict).replace(errback=None)
            if "render_static_document" in sample.meta and self.offline_samples:
                self._start_offline(sample)
            elif (since := self._sampling.get(host)) is not None and time.monotonic() - since < _PATIENCE:
                self.stats.inc_value("render/samples_skipped")  # the host's sample under way is evidence enough
            else:
                self._sampling[host] = time.monotonic()
                self.crawler.engine.crawl(sample)
        return response

    def process_exception(self, request: Request, exception: Exception, spider: Any = None) -> None:
        if request.meta.get("render_prefetch") is not None:
            self._prefetched(request)
        if request.meta.get("render_reason") == "sample" and not request.meta.get("render_offline"):
            self._sample_done(request)
            self._settled(request)  # evidence only, and it has no errback to record the failure
        return None

    def _settled(self, request: Request) -> None:
        """A sample's request through the frontier is over with no page to store."""
        self.crawler.signals.send_catch_log(crawl_signals.request_settled, request=request)

    def _sample_done(self, request: Request) -> None:
        """A sample's render through the frontier is over: the host's next sample may go."""
        self._sampling.pop(urlparse_cached(request).hostname or "", None)

    def _prefetched(self, request: Request) -> None:
        """A host's prefetch is over: the samples that waited for it are rendered offline again."""
        _, waiting = self._prefetching.pop(urlparse_cached(request).hostname or "", (0.0, []))
        for sample in waiting:
            self._start_offline(sample)

    def _start_offline(self, sample: Request) -> None:
        size = _document_bytes(sample)
        if len(self._offline_waiting) >= _OFFLINE_WAITING_MAX or (
                self._offline_waiting and self._offline_waiting_bytes + size > _OFFLINE_WAITING_BYTES):
            self.stats.inc_value("render/samples_dropped")
            return
        self._offline_waiting.append(sample)
        self._offline_waiting_bytes += size
        self._next_offline()

    def _idle(self) -> None:
        """Keep the spider open while offline samples run or wait: one may yet go to the frontier
        (between its render and its judging the engine is otherwise idle)."""
        if self._offline or self._offline_waiting:
            raise DontCloseSpider

    def _close(self) -> None:
        """The crawl is over: samples still waiting are dropped, those under way cancelled (they
        would hand the closed engine their requests)."""
        self._offline_waiting.clear()
        self._offline_waiting_bytes = 0
        for task in list(self._offline):
            task.cancel()

    def _next_offline(self, done: asyncio.Future | None = None) -> None:
        self._offline.discard(done)
        while self._offline_waiting and len(self._offline) < _OFFLINE_AT_ONCE:
            sample = self._offline_waiting.popleft()
            self._offline_waiting_bytes -= _document_bytes(sample)
            task = asyncio.ensure_future(self._sample_offline(sample))
            self._offline.add(task)
            task.add_done_callback(self._next_offline)

    async def _sample_offline(self, sample: Request) -> None:
        """Render ``sample`` without the server. What it missed is fetched through the frontier
        (a prefetch, holding the host for those fetches only) and the render tried again; after
        ``_PREFETCH_ROUNDS`` it is judged with what it has. When it shows more, or its render
        failed, the sample is rendered through the frontier."""
        offline = sample.replace(meta={**_per_page(sample.meta), "render_offline": True,
                                       "download_slot": _OFFLINE_SLOT})
        rounds = sample.meta.get("render_prefetch_rounds", 0)
        carried = sum(len(answer[2]) for answer in (sample.meta.get("render_prefetched") or {}).values() if answer)
        # Past its prefetches a sample is judged with what it has, its misses failed as a dead
        # link's would: rendered through the frontier instead, it held its host for seconds.
        last_round = rounds >= _PREFETCH_ROUNDS or carried > _PREFETCH_MAX_BYTES
        missed: list[str] = []
        try:
            response = await self.crawler.engine.download_async(offline)
            missed = offline.meta.get("render_missed") or []
            if (not missed or last_round) and isinstance(response, TextResponse) \
                    and await self._judged_offline(sample, response):
                if missed:
                    self.stats.inc_value("render/samples_incomplete")
                return  # judged: the static page already showed it all
        except Exception as exc:  # noqa: BLE001 - a failed render is retried the usual way
            logger.debug("offline render of %s failed: %r", sample.url, exc)
        # First in its host's queue, so the evidence comes while it is still of use.
        first = max(sample.priority, 1)
        if missed and not last_round:
            host = urlparse_cached(sample).hostname or ""
            pending = self._prefetching.get(host)
            if pending is not None and time.monotonic() - pending[0] < _PATIENCE:
                pending[1].append(sample)  # the host's prefetch under way likely fetches this too
                return
            if pending is not None:  # its prefetch was lost or went to another worker: these waited in vain
                self.stats.inc_value("render/samples_dropped", len(pending[1]))
            self._prefetching[host] = (time.monotonic(), [])
            self._crawl(sample.replace(priority=first, meta={
                **sample.meta, "render_prefetch": list(dict.fromkeys(missed)), "render_prefetch_rounds": rounds + 1}))
            return
        if self._crawl(sample.replace(priority=first)):
            self.stats.inc_value("render/offline_retried")

    def _crawl(self, request: Request) -> bool:
        """Hand the engine a sample's request, unless the spider is closing (at its timeout: evidence
        that comes after the crawl's end is of no use, and a closed engine raises)."""
        if engine_closing(self.crawler):
            return False
        self.crawler.engine.crawl(request)
        return True

    async def _judged_offline(self, sample: Request, rendered: TextResponse) -> bool:
        """Compare an offline render with its static page (main text read in a page thread) and
        learn from it; False when it showed more (it is rendered through the frontier, and kept)."""
        links, static_chars, encoding = sample.meta["render_static"]
        workers = PageWorkers.of(self.crawler)
        read = workers.run if workers.enabled else _now
        if static_chars is None:
            static_chars = await read(self._main_chars, sample.meta["render_static_document"][2], encoding)
        rendered_chars = await read(self._main_chars, rendered.body, rendered.encoding)
        comparison = Comparison(links, static_chars, parsed_page(rendered, self.budget).anchor_count, rendered_chars)
        if comparison.gain(self.evidence.min_more):
            return False
        self._learn(urlparse_cached(sample).hostname or "", bool(sample.meta.get("render_judged")), comparison)
        self.stats.inc_value("render/samples")
        self.stats.inc_value("render/samples_offline")
        return True

    def _render_again(self, request: Request, response: TextResponse, reason: str, verdict: Verdict) -> Request:
        meta = {k: v for k, v in request.meta.items() if k not in _PER_DOWNLOAD_META}
        # An offline sample waits beside the frontier, not in it: it carries any document judged.
        offline = reason == "sample" and self.offline_samples
        reuse = len(response.body) <= (_SHELL_MAX_BYTES if offline else _DOCUMENT_REUSE_MAX_BYTES)
        # What the static page showed, for the comparison with its render (a sample rendered
        # offline reads its main text in a page thread, from the document it carries).
        chars = None if reuse and reason == "sample" else self._main_chars(response.body, response.encoding)
        meta.update(playwright=True, render_reason=reason, render_static=(verdict.links, chars, response.encoding),
                    render_judged=verdict.needs)
        if reuse:
            # The browser is handed the document already fetched instead of asking the server again.
            meta["render_static_document"] = (response.status, dict(response.headers), response.body)
        self.crawler.signals.send_catch_log(crawl_signals.render_queued)
        return request.replace(url=response.url, meta=meta, dont_filter=True)

    def _rendered(self, host: str, request: Request, response: Response) -> Response:
        reason = request.meta.get("render_reason", "request")
        document = request.meta.pop("render_document", None)
        if request.meta.get("render_offline"):
            return response  # judged by its task (_sample_offline), off the reactor's thread
        if reason == "sample":
            self._sample_done(request)
        comparison = None
        if self.mode == "auto" and isinstance(response, TextResponse):
            static = request.meta.get("render_static")
            judged = request.meta.get("render_judged")
            if static is None and document is not None and is_html(document[1]):
                encoding, text = html_to_unicode(document[1] or None, document[0])
                verdict = self.judge(ParsedPage(text, self.budget))
                static, judged = (verdict.links, self._main_chars(document[0], encoding)), verdict.needs
            if static is not None:
                static_chars = static[1]
                if static_chars is None:  # a sample rendered here after all: its document is the static page
                    carried = request.meta.get("render_static_document")
                    static_chars = self._main_chars(carried[2] if carried else document[0] if document else b"",
                                                    static[2])
                rendered = parsed_page(response, self.budget)
                comparison = Comparison(static[0], static_chars, rendered.anchor_count,
                                        self._main_chars(response.body, response.encoding))
                self._learn(host, bool(judged), comparison)
        if reason == "sample":
            self.stats.inc_value("render/samples")
            if comparison is None or not comparison.gain(self.evidence.min_more):
                self._settled(request)
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
