"""The download handler: plain HTTP/1.1, or a page rendered in the system Chromium.

Requests with ``meta["playwright"]`` (set by
:class:`~crawlproj.downloadermiddlewares.render_decision.RenderDecisionMiddleware`) are rendered
through scrapy-playwright; every other request takes Scrapy's HTTP/1.1 path, with
the server's ``Connection`` header exposed as in
:mod:`crawlproj.politeness.keepalive`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import multiprocessing
import os
import time
from collections import Counter, OrderedDict
from contextlib import suppress
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler
from scrapy_playwright.page import PageMethod

from ..errors import RenderTimeout
from .. import signals as crawl_signals
from ..politeness.interval import IntervalPolicy
from ..politeness.keepalive import expose_connection_header
from ..extensions.stalls import crawler_held, held_mark
from .browser import INSTALL_HINT, browser_cpus, browser_rss, descendants, find_chromium, lower_priority
from .pacing import SubrequestPacer
from .shadow import FLATTEN_SHADOW_ROOTS

logger = logging.getLogger(__name__)

#: Response headers that describe the transfer, not the (already decoded) body.
_TRANSFER_HEADERS = {b"content-encoding", b"content-length", b"transfer-encoding", b"connection", b"keep-alive"}
#: A URL ``render_prefetched`` does not hold.
_ABSENT = object()
#: Browser request headers passed on to the server; Scrapy adds its own User-Agent.
_FORWARDED_HEADERS = {"accept", "accept-language", "referer"}


#: Answers that say a resource is missing: kept by the asset cache for any request of a render.
_MISSING = frozenset({404, 410})
#: A render's requests the asset cache answers (GET only): scripts, and scripts' data requests.
_CACHED_TYPES = frozenset({"script", "fetch", "xhr"})
#: A page kept for the next render goes to about:blank within this (it has no network).
_PARK_TIMEOUT_MS = 5000


class AssetCache:
    """The scripts renders fetched, by URL, up to ``max_bytes`` (least recently used out).

    Playwright's request routing turns the browser's own HTTP cache off, so without this
    every render would fetch a site's whole bundle again, each request with its politeness
    rest: a render of a documentation page cost its host about 2 s of its turn, and a
    single-page app's bundle went to the server once a page. A response that says
    ``no-store`` or ``private`` is not kept. A missing resource's answer (404, 410: cacheable
    by default, RFC 9110 15.1) is kept too, and answers a script's data request as well: a
    site's search script asked for an index the server does not have on every sample."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes, self.size = max_bytes, 0
        self._entries: OrderedDict[str, Response] = OrderedDict()

    def get(self, url: str, script: bool = True) -> Response | None:
        """The answer kept for ``url``; for a request that is not a script's (``script`` False),
        only a missing resource's."""
        response = self._entries.get(url)
        if response is None or not script and response.status not in _MISSING:
            return None
        self._entries.move_to_end(url)
        return response

    def put(self, url: str, response: Response, script: bool = True) -> None:
        """Keep ``response`` for ``url``; for a request that is not a script's (``script`` False),
        only a missing resource's (what :meth:`get` would answer it with)."""
        control = (response.headers.get(b"Cache-Control") or b"").lower()
        if response.status not in _MISSING and (response.status != 200 or not script):
            return
        if b"no-store" in control or b"private" in control:
            return
        if len(response.body) > self.max_bytes or url in self._entries:
            return
        self._entries[url] = response
        self.size += len(response.body)
        while self.size > self.max_bytes:
            _, dropped = self._entries.popitem(last=False)
            self.size -= len(dropped.body)


#: Renders read before they settled that are logged at INFO, with why; later ones at DEBUG.
_UNSETTLED_LOGGED = 10

#: How often a render asks whether the app has settled: each question is a round trip to the
#: browser, on the reactor's thread too.
_IDLE_POLL_SECONDS = 0.05


class _RenderClock:
    """One render's time budget: re-armed to RENDER_TIMEOUT once the browser has the page open."""

    def __init__(self) -> None:
        self.budget: asyncio.Timeout | None = None
        self.opened = False


# Set around a render so the page-open hook below can find its clock (scrapy-playwright calls it
# in the same task, a few frames down).
_render_clock: contextvars.ContextVar[_RenderClock | None] = contextvars.ContextVar("render_clock", default=None)


class _Render:
    """One page being rendered: its pending sub-requests, for the idle wait, and what they cost."""

    def __init__(self, host: str, idle_seconds: float, idle_timeout: float) -> None:
        self.host = host
        self.idle_seconds, self.idle_timeout = idle_seconds, idle_timeout
        self.pending = 0
        self.last_activity = time.monotonic()
        self.server_seconds = 0.0  # the longest sub-request: what the server spent on one fetch
        self.server_done: float | None = None  # when the last sub-request the server answered ended
        self.document: tuple[bytes, str] | None = None  # the raw main document (body, Content-Type)
        self.given: Response | None = None  # the document the static fetch already got, for the browser
        self.offline = False  # render without the server: a request the cache cannot answer is refused
        self.missed: list[str] = []  # what an offline render refused for want of the server
        self.prefetched: dict[str, tuple | None] = {}  # url -> (status, headers, body) fetched for it; None: failed
        self.idle_timed_out = False
        self.unsettled = ""  # why the idle wait ran out: what was still going on at its end
        # What the browser loaded besides the main document, kept for the archive (REQUISITES_ENABLED):
        # (url, resource type, status, header pairs, body); None: not kept.
        self.loaded: list[tuple[str, str, int, list[tuple[str, str]], bytes]] | None = None

    def begin(self) -> None:
        self.pending += 1
        self.last_activity = time.monotonic()

    def end(self) -> None:
        self.pending -= 1
        self.last_activity = time.monotonic()

    def network_idle(self) -> bool:
        return self.pending == 0 and time.monotonic() - self.last_activity >= self.idle_seconds

    async def wait_idle(self, page: Any) -> None:
        """Return once the app has settled: for ``idle_seconds`` together, no sub-request pending
        (a fetch() started by a script after the load event is waited for) and no change to
        the DOM's nodes or text (a MutationObserver in the page); or after ``idle_timeout``."""
        deadline = time.monotonic() + self.idle_timeout
        quiet_ms = self.idle_seconds * 1000
        unchanged = None
        while time.monotonic() < deadline:
            if self.network_idle():
                try:  # ms since the DOM last changed (0 on the first call, and on a new document)
                    unchanged = await page.evaluate(_DOM_UNCHANGED_MS)
                except Exception:  # noqa: BLE001 - the page is navigating: wait on
                    unchanged = 0.0
                if unchanged >= quiet_ms:
                    return
            else:
                unchanged = None
            await asyncio.sleep(_IDLE_POLL_SECONDS)
        self.idle_timed_out = True
        if self.pending:
            self.unsettled = f"{self.pending} sub-request(s) pending"
        elif unchanged is not None:
            self.unsettled = f"its DOM changed {unchanged / 1000:.1f} s before"
        else:
            self.unsettled = "a sub-request ended within the last idle window"


#: Milliseconds since the DOM's nodes or text last changed, or the page's main thread last ran a
#: long task (a MutationObserver and a PerformanceObserver that the first call installs, so the
#: first answer is 0). Attributes are not watched: an animation changes them forever. A long task
#: counts because this question waits behind it: an app parsing its data for a second with the
#: DOM untouched looked settled the moment it finished, and was read before it rendered (the
#: likely cause of Redoc's 270 characters of 786, stored once on a loaded machine).
_DOM_UNCHANGED_MS = """() => {
  if (!window.__crawlprojObserver) {
    window.__crawlprojChanged = performance.now();
    window.__crawlprojObserver = new MutationObserver(() => { window.__crawlprojChanged = performance.now(); });
    window.__crawlprojObserver.observe(document, {subtree: true, childList: true, characterData: true});
    window.__crawlprojLongTasks = null;
    try {
      window.__crawlprojLongTasks = new PerformanceObserver(() => {});
      window.__crawlprojLongTasks.observe({type: "longtask"});
    } catch (e) {}
  }
  // Taken here, not in the observer's callback: that runs in a task of its own, after this one.
  for (const task of window.__crawlprojLongTasks ? window.__crawlprojLongTasks.takeRecords() : []) {
    window.__crawlprojChanged = Math.max(window.__crawlprojChanged, task.startTime + task.duration);
  }
  return performance.now() - window.__crawlprojChanged;
}"""


class RenderingDownloadHandler(ScrapyPlaywrightDownloadHandler):
    """Renders flagged requests in the system Chromium, politely and on a budget.

    Promises:

    * the browser is ``CHROMIUM_PATH`` (or the system ``chromium``), launched on the
      first render only, never a Playwright download;
    * the browser runs at ``RENDER_BROWSER_PRIORITY`` (by default, only on the CPU the
      crawl's own process leaves) and off ``RENDER_BROWSER_SPARE_CPUS`` of the machine's
      CPUs, so no host's next request waits for a render (the crawl's helper processes
      keep their priority);
    * at most ``RENDER_MAX_PAGES`` pages are open at once; a page that rendered well is sent to
      ``about:blank`` and kept for the next render (a new page starts a renderer process,
      twice the CPU of the render itself), one that failed or timed out is closed
      (``RENDER_TIMEOUT`` for the whole render, ``RENDER_NAVIGATION_TIMEOUT`` for the navigation);
    * a fresh browser context every ``RENDER_CONTEXT_MAX_PAGES`` pages (the old one is
      closed once its pages are done), so a long crawl does not grow the browser;
    * resource types in ``RENDER_BLOCK_RESOURCE_TYPES`` (images, fonts, media, ...), the
      documents of frames (not part of the page's DOM), non-GET requests and, unless
      ``RENDER_OTHER_HOSTS``, requests to other hosts
      are blocked;
    * every other browser request is fetched by Scrapy's downloader (robots.txt,
      address safety, size limits and the User-Agent apply), one at a time per host
      with the politeness rest between them (:class:`~.pacing.SubrequestPacer`); a
      script is fetched once per crawl, then served from :class:`AssetCache`;
    * the DOM is read once the app has settled: no sub-request pending and no change to the
      DOM's nodes or text for ``RENDER_IDLE_SECONDS`` (within ``RENDER_IDLE_TIMEOUT``).

    A page queued to be rendered after its static fetch brings that document along
    (``render_static_document``): the browser is handed it rather than fetching it again.
    Such a render flagged ``render_offline`` never asks the server: a request that neither
    the document, the script cache nor ``render_prefetched`` answers is refused, and its
    URL listed in ``render_missed``. A request with ``render_prefetch`` (URLs) opens no
    browser: it fetches those URLs, paced as sub-requests, into ``render_prefetched``
    (url -> (status, headers, body)), the answers the render's next offline attempt needs.

    It records on the request: ``render_server_done`` (when the server's last sub-request
    ended: the host's rest runs from then, not from the end of the render),
    ``render_server_seconds`` (the longest sub-request,
    the fetch duration the frontier's politeness uses) and ``render_document`` (the
    raw HTML the server sent, which tells whether the page needed rendering).
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        expose_connection_header(self, crawler.settings)
        s = crawler.settings
        self.crawler = crawler
        options = dict(self.config.launch_options)
        if "executable_path" not in options:
            options["executable_path"] = find_chromium(s.get("CHROMIUM_PATH") or "") or s.get("CHROMIUM_PATH") or ""
        options.setdefault("headless", True)
        # Chromium resolves no name and reaches no address on its own: every request a page
        # makes is fetched by Scrapy's downloader through the route below (address safety,
        # robots.txt, politeness), and whatever bypasses routing (preconnect, WebSockets,
        # workers, beacons) fails to resolve instead of connecting. IP literals included.
        options["args"] = [*options.get("args", ()), "--host-resolver-rules=MAP * ~NOTFOUND"]
        self.config.launch_options = options
        self.max_pages = s.getint("RENDER_MAX_PAGES")
        self.config.max_pages_per_context = self.max_pages
        self.navigation_timeout = s.getfloat("RENDER_NAVIGATION_TIMEOUT")
        self.config.navigation_timeout_ms = self.navigation_timeout * 1000
        self.render_timeout = s.getfloat("RENDER_TIMEOUT")
        self.idle_seconds = s.getfloat("RENDER_IDLE_SECONDS")
        self.idle_timeout = s.getfloat("RENDER_IDLE_TIMEOUT")
        self.context_max_pages = s.getint("RENDER_CONTEXT_MAX_PAGES")
        self.blocked_types = {t.lower() for t in s.getlist("RENDER_BLOCK_RESOURCE_TYPES")}
        self.other_hosts = s.getbool("RENDER_OTHER_HOSTS")
        self.priority = s.get("RENDER_BROWSER_PRIORITY")
        self.cpus = browser_cpus(os.sched_getaffinity(0), s.getint("RENDER_BROWSER_SPARE_CPUS")) \
            if hasattr(os, "sched_getaffinity") else None
        self.policy = IntervalPolicy.from_settings(s)  # only when no frontier answers rest_after
        self.pacer = SubrequestPacer(self._rest)
        self.assets = AssetCache(s.getint("RENDER_ASSET_CACHE_BYTES"))
        # With requisites on, what a page's scripts loaded (scripts, fetch/XHR answers) is archived
        # beside it, as Browsertrix records a browser's traffic; at most this many a page.
        self.keep_loaded = (s.getint("REQUISITES_MAX_PER_PAGE") or 1000) if s.getbool("REQUISITES_ENABLED") else 0
        self._pages = asyncio.Semaphore(self.max_pages)
        self._launched = False
        self._launching = asyncio.Lock()
        self._generation = 0
        self._generation_pages = 0
        self._open: Counter[int] = Counter()  # context generation -> renders in progress
        self._idle_pages: dict[int, list[Any]] = {}  # context generation -> pages at about:blank
        self._rss_sampled = 0.0
        self.browser_max_rss = s.getint("RENDER_BROWSER_MAX_RSS")
        self._restart_wanted = False
        self._quiet = asyncio.Event()  # cleared while the browser restarts: renders wait for it
        self._quiet.set()
        crawler.signals.connect(self._launch_soon, signal=crawl_signals.render_queued)

    # -- launch and close ----------------------------------------------------
    async def _maybe_launch_in_thread(self) -> None:
        """scrapy-playwright starts Playwright with the engine; we wait for the first render."""

    async def _ensure_launched(self) -> None:
        async with self._launching:
            if not self._launched:
                path = self.config.launch_options.get("executable_path")
                if not path:
                    raise RuntimeError(f"no Chromium to render with; install it ({INSTALL_HINT}) or set CHROMIUM_PATH")
                await self._launch()  # Playwright's driver: the browser it starts inherits its priority
                helpers = {child.pid for child in multiprocessing.active_children()}  # page and document helpers
                lower_priority(descendants(os.getpid(), excluding=helpers), self.priority, self.cpus)
                self._launched = True
                logger.info("rendering with %s (at most %d pages at once)", path, self.max_pages)

    def _launch_soon(self) -> None:
        """A render is queued: start the browser now (a failure is left to the render to report)."""
        if not self._launched and not self._launching.locked():
            asyncio.ensure_future(self._ensure_launched()).add_done_callback(lambda task: task.exception())

    # -- one render ----------------------------------------------------------
    async def _download_request(self, request: Request, spider: Any = None) -> Response:
        if request.meta.get("render_prefetch") is not None:
            return await self._prefetch(request)
        await self._ensure_launched()
        await self._quiet.wait()
        async with self._pages:
            generation = self._generation
            self._generation_pages += 1
            if self.context_max_pages and self._generation_pages >= self.context_max_pages:
                self._generation += 1  # the next render opens a fresh context
                self._generation_pages = 0
            request.meta["playwright_context"] = f"render-{generation}"
            # The page stays open for the next render (scrapy-playwright would close it).
            request.meta["playwright_include_page"] = True
            if idle := self._idle_pages.get(generation):
                request.meta["playwright_page"] = idle.pop()
                self.stats.inc_value("render/pages_reused")
            self._open[generation] += 1
            rendered = False
            # RENDER_TIMEOUT counts from when the browser has the page open: a new context or
            # renderer process in a just-launched browser on a busy machine took over 5 s, the
            # browser's cost, not the page's. Opening it is bounded apart, by RENDER_NAVIGATION_TIMEOUT.
            clock = _RenderClock()
            token = _render_clock.set(clock)
            try:
                async with asyncio.timeout(self.navigation_timeout) as clock.budget:
                    response = await super()._download_request(request, spider)
                rendered = True
                return response
            except TimeoutError:
                self.stats.inc_value("render/timeouts")
                if clock.opened:
                    raise RenderTimeout(f"rendering {request.url} took over {self.render_timeout:g} s") from None
                raise RenderTimeout(f"the browser did not open a page for {request.url} "
                                    f"within {self.navigation_timeout:g} s") from None
            finally:
                request.meta.pop("playwright_include_page", None)
                if (page := request.meta.pop("playwright_page", None)) is not None:  # not for the spider
                    await (self._park(page, generation) if rendered else self._close_page(page, failed=True))
                _render_clock.reset(token)
                self._open[generation] -= 1
                await self._retire_contexts()
                self._sample_memory()
                self._maybe_restart()

    async def _create_page(self, request: Request, spider: Any) -> Any:
        page = await super()._create_page(request=request, spider=spider)
        # Once a page, when it opens: it is kept for later renders, and its routes with it.
        await page.route_web_socket("**", self._refuse_websocket)
        return page

    async def _download_request_with_page(self, request: Request, page: Any, spider: Any) -> Response:
        if (clock := _render_clock.get()) is not None and clock.budget is not None:
            clock.opened = True
            clock.budget.reschedule(asyncio.get_running_loop().time() + self.render_timeout)
        render = _Render(urlsplit(request.url).hostname or "", self.idle_seconds, self.idle_timeout)
        given = request.meta.pop("render_static_document", None)
        if given is not None:
            status, headers, body = given
            render.given = Response(request.url, status=status, headers=headers, body=body)
            render.offline = bool(request.meta.get("render_offline"))
        render.prefetched = request.meta.get("render_prefetched") or {}
        if self.keep_loaded:
            render.loaded = []
        # Replace scrapy-playwright's route handler: every request of the page goes through ours.
        await page.unroute("**")
        await page.route("**", partial(self._route, render, page))
        methods = list(request.meta.get("playwright_page_methods") or ())
        flattened = PageMethod("evaluate", FLATTEN_SHADOW_ROOTS)  # read once the app has settled
        request.meta["playwright_page_methods"] = [*methods, PageMethod(render.wait_idle), flattened]
        self.stats.inc_value("render/pages")
        try:
            response = await super()._download_request_with_page(request, page, spider)
        finally:
            request.meta["playwright_page_methods"] = methods
            # Recorded whatever the end, a timeout too: the host rests after its server's time,
            # not the browser's (a page whose script spins rested its host ten times its render).
            request.meta["render_server_seconds"] = render.server_seconds
            request.meta["render_server_done"] = render.server_done
        if render.idle_timed_out:
            self.stats.inc_value("render/idle_timeouts")
            # The first few at INFO, to say why; a site whose every page animates its text would
            # otherwise log a line a page (the stat counts them all).
            count = self.stats.get_value("render/idle_timeouts")
            last = "; later ones at DEBUG, counted in render/idle_timeouts" if count == _UNSETTLED_LOGGED else ""
            level = logging.INFO if count <= _UNSETTLED_LOGGED else logging.DEBUG
            logger.log(level, "%s read before it settled, after %g s: %s%s", request.url, self.idle_timeout,
                       render.unsettled, last)
        request.meta["render_document"] = render.document
        if render.loaded:
            request.meta["render_loaded"] = render.loaded
        if render.offline:
            request.meta["render_missed"] = render.missed
        if isinstance(getattr(flattened, "result", None), str):  # web components: their shadow roots' DOM too
            self.stats.inc_value("render/shadow_dom_pages")
            response = response.replace(body=flattened.result.encode(getattr(response, "encoding", None) or "utf-8",
                                                                      "xmlcharrefreplace"))
        return response

    async def _route(self, render: _Render, page: Any, route: Any, browser_request: Any) -> None:
        render.begin()
        try:
            document = browser_request.resource_type == "document"
            main_document = document and browser_request.frame == page.main_frame
            # A frame's document is not part of the page's DOM, which is all a render is read for.
            refused = "subframe" if document and not main_document else self._refuses(render, browser_request)
            if refused:
                self.stats.inc_value(f"render/blocked/{refused}")
                await route.abort("blockedbyclient")
                return
            cacheable = browser_request.resource_type in _CACHED_TYPES and browser_request.method == "GET"
            script = browser_request.resource_type == "script"
            if main_document and render.given is not None and browser_request.url == render.given.url:
                # The document the static fetch already got: the server is not asked twice.
                response, render.given = render.given, None
                self.stats.inc_value("render/documents_reused")
            elif (known := render.prefetched.get(browser_request.url, _ABSENT)) is not _ABSENT:
                if known is None:  # the prefetch failed: so does the render's request, as it would online
                    raise ConnectionError("prefetch failed")
                status, headers, body = known
                response = Response(browser_request.url, status=status, headers=headers, body=body)
                if cacheable:
                    self.assets.put(browser_request.url, response, script)
            elif (response := self.assets.get(browser_request.url, script) if cacheable else None) is not None:
                self.stats.inc_value("render/asset_cache_hits")
            elif render.offline:
                # The server is not asked: the render is tried again once this is fetched.
                render.missed.append(browser_request.url)
                await route.abort("blockedbyclient")
                return
            else:
                headers = {k: v for k, v in (await browser_request.all_headers()).items()
                           if k.lower() in _FORWARDED_HEADERS}
                response = await self.pacer.run(render.host, partial(self._fetch, render, browser_request.url,
                                                                     browser_request.method, headers))
                if cacheable:
                    self.assets.put(browser_request.url, response, script)
            if main_document:
                render.document = (response.body, (response.headers.get(b"Content-Type") or b"").decode("latin-1"))
            elif render.loaded is not None and len(render.loaded) < self.keep_loaded:
                render.loaded.append((browser_request.url, browser_request.resource_type, response.status,
                                      [(k.decode("latin-1"), v.decode("latin-1"))
                                       for k, values in response.headers.items() for v in values], response.body))
            headers = {k.decode("latin-1"): ", ".join(v.decode("latin-1") for v in values)
                       for k, values in response.headers.items() if k.lower() not in _TRANSFER_HEADERS}
            await route.fulfill(status=response.status, headers=headers, body=response.body)
        except Exception as exc:  # noqa: BLE001 - robots.txt, address safety, network errors, a closed page
            self.stats.inc_value("render/subrequest_errors")
            logger.debug("render sub-request %s failed: %r", browser_request.url, exc)
            with suppress(Exception):
                await route.abort("failed")
        finally:
            render.end()

    async def _refuse_websocket(self, websocket: Any) -> None:
        """A page's WebSocket is closed before it connects: a crawler does not hold live channels."""
        self.stats.inc_value("render/blocked/websocket")
        with suppress(Exception):
            await websocket.close(code=1008, reason="crawler")

    def _refuses(self, render: _Render, browser_request: Any) -> str | None:
        """Why a browser request is not fetched (a stats key), or None."""
        if browser_request.resource_type in self.blocked_types:
            return browser_request.resource_type
        parts = urlsplit(browser_request.url)
        if parts.scheme not in ("http", "https"):
            return "scheme"
        if browser_request.method not in ("GET", "HEAD"):
            return "method"  # a crawler reads; it never submits
        if not self.other_hosts and (parts.hostname or "") != render.host:
            return "other_host"
        return None

    async def _fetch(self, render: _Render, url: str, method: str = "GET", headers: dict | None = None) -> Response:
        """Fetch one browser request with Scrapy's downloader (its own slot, so it does not
        queue behind the render that is waiting for it)."""
        host = urlsplit(url).hostname or ""
        request = Request(url, method=method, headers=headers or {}, dont_filter=True,
                          meta={"render_subrequest": True, "dont_redirect": True, "dont_retry": True,
                                "handle_httpstatus_all": True, "download_slot": f"render:{host}"})
        started, mark = time.monotonic(), held_mark()
        response = await self.crawler.engine.download_async(request)
        render.server_done = time.monotonic()
        seconds = render.server_done - started
        # The server's time: not the crawler's own (its thread busy meanwhile), as for any fetch.
        render.server_seconds = max(render.server_seconds, seconds - crawler_held(seconds, mark, held_mark()))
        self.stats.inc_value("render/subrequests")
        return response

    async def _prefetch(self, request: Request) -> Response:
        """Fetch what an offline render of ``request`` missed, one at a time with the host's
        rest between them, holding the host for those fetches only: no browser is opened."""
        render = _Render(urlsplit(request.url).hostname or "", self.idle_seconds, self.idle_timeout)
        fetched = dict(request.meta.get("render_prefetched") or {})
        for url in request.meta["render_prefetch"]:
            if url in fetched or self.assets.get(url) is not None:
                continue  # fetched meanwhile
            try:
                response = await self.pacer.run(render.host, partial(self._fetch, render, url, "GET",
                                                                     {"Referer": request.url}))
                fetched[url] = (response.status, dict(response.headers), response.body)
                self.assets.put(url, response)  # a script others need too (only scripts are read from it)
            except Exception as exc:  # noqa: BLE001 - robots.txt, address safety, network errors
                self.stats.inc_value("render/subrequest_errors")
                logger.debug("render prefetch %s failed: %r", url, exc)
                fetched[url] = None
        self.stats.inc_value("render/prefetches")
        request.meta["render_prefetched"] = fetched
        request.meta["render_server_seconds"] = render.server_seconds
        request.meta["render_server_done"] = render.server_done
        return Response(request.url, status=200, flags=["render_prefetch"], request=request)

    async def _park(self, page: Any, generation: int) -> None:
        """Keep a page that rendered well for its context's next render, at ``about:blank``: its
        scripts stop, and nothing it asks for later reaches the route of the render it did."""
        if generation != self._generation:  # its context is being retired
            await self._close_page(page)
            return
        try:
            await page.unroute("**")
            await page.goto("about:blank", timeout=_PARK_TIMEOUT_MS)
        except Exception:  # noqa: BLE001 - a crashed or closing page is closed instead
            self.stats.inc_value("render/pages_closed_after_error")
            await self._close_page(page)
            return
        self._idle_pages.setdefault(generation, []).append(page)

    async def _close_page(self, page: Any, failed: bool = False) -> None:
        if not page.is_closed():
            with suppress(Exception):
                await page.close()
            if failed:
                self.stats.inc_value("render/pages_closed_after_error")

    # -- politeness ----------------------------------------------------------
    def _rest(self, host: str, duration: float) -> float:
        """The frontier's rest for ``host`` after a fetch of ``duration``: one source of politeness."""
        answers = [seconds for _, seconds in self.crawler.signals.send_catch_log(
            crawl_signals.rest_after, host=host, duration=duration) if isinstance(seconds, (int, float))]
        return max(answers) if answers else self.policy.interval(duration).seconds

    # -- budget --------------------------------------------------------------
    async def _retire_contexts(self) -> None:
        """Close the contexts of past generations once their last page is done."""
        for generation in [g for g, n in self._open.items() if g < self._generation and n <= 0]:
            del self._open[generation]
            self._idle_pages.pop(generation, None)  # closed with their context
            wrapper = self.context_wrappers.get(f"render-{generation}")
            if wrapper is not None:
                with suppress(Exception):
                    await wrapper.context.close()
                self.stats.inc_value("render/contexts_closed")

    def _sample_memory(self) -> None:
        now = time.monotonic()
        if now - self._rss_sampled < 1.0:
            return
        self._rss_sampled = now
        # Off the reactor's thread: reading every browser process's smaps takes milliseconds.
        asyncio.get_running_loop().run_in_executor(None, browser_rss).add_done_callback(self._memory_sampled)

    def _memory_sampled(self, done: asyncio.Future) -> None:
        if done.cancelled() or done.exception() is not None:
            return
        rss = done.result()
        self.stats.set_value("render/browser_rss_bytes", rss)
        self.stats.max_value("render/browser_rss_max_bytes", rss)
        if self.browser_max_rss and rss > self.browser_max_rss:
            self._restart_wanted = True
            self._maybe_restart()

    def _maybe_restart(self) -> None:
        """Restart the browser past ``RENDER_BROWSER_MAX_RSS`` (a renderer gives its memory back
        only when its process ends; one reached 2.3 GB): new renders wait, those in flight end."""
        if self._restart_wanted and self._quiet.is_set():
            self._restart_wanted = False
            self._quiet.clear()
            asyncio.ensure_future(self._restart_browser()).add_done_callback(self._restarted)

    @staticmethod
    def _restarted(task: asyncio.Future) -> None:
        if not task.cancelled() and task.exception() is not None:
            logger.warning("restarting the browser failed: %r", task.exception())

    async def _restart_browser(self) -> None:
        try:
            while sum(self._open.values()) > 0:  # the renders in flight end first
                await asyncio.sleep(0.05)
            browser = getattr(self, "browser", None)
            if browser is None:
                return
            self._generation += 1  # the next render opens a fresh context in the new browser
            self._generation_pages = 0
            self._open.clear()
            self._idle_pages.clear()  # closed with their contexts
            for name in list(self.context_wrappers):
                wrapper = self.context_wrappers.pop(name)
                with suppress(Exception):
                    await wrapper.context.close()
            with suppress(Exception):
                await browser.close()
            if hasattr(self, "browser"):  # its disconnect callback may have dropped it already
                del self.browser  # scrapy-playwright launches a new one with the next context
            self.stats.inc_value("render/browser_restarts")
            logger.info("the browser passed RENDER_BROWSER_MAX_RSS (%d MB): restarted", self.browser_max_rss >> 20)
        finally:
            self._quiet.set()
