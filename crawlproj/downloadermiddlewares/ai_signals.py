"""The AI-use downloader middleware: the Scrapy adapter of :mod:`.ai_signal_rules`."""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import SplitResult

from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request, Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from .. import signals as crawl_signals
from ..politeness.ai_signal_rules import TDMREP_PATH, TdmRep, header_signals, reserved_uses

logger = logging.getLogger(__name__)

#: Prefix of the IgnoreRequest message of a skipped page (the spider records it as skipped).
RESERVED = "AI use reserved by the publisher"


class AiSignalsMiddleware:
    """Records what publishers say of AI use, and with ``AI_USE_SKIP`` skips what they reserve.

    Per host: the robots.txt ``Content-Signal`` values of the crawler's group (announced by
    the robots.txt middleware, :data:`crawlproj.signals.ai_signals`) and, with ``AI_USE_TDMREP``
    or ``AI_USE_SKIP``, ``/.well-known/tdmrep.json``. That file is fetched once per host as
    robots.txt is: it takes the visit of the request that found it missing, which goes back to
    the frontier; the host rests after it (:data:`crawlproj.signals.side_fetched`).
    Per page: the ``tdm-reservation`` and ``tdm-policy`` headers and the tdmrep.json rule that
    matches. A page's signals are left in ``request.meta["ai_signals"]`` for its item.

    A request whose host reserves a use ``AI_USE_SKIP`` names is refused before it is sent; a
    response whose headers reserve one is refused when it arrives (not stored). Both raise
    IgnoreRequest with a message starting :data:`RESERVED`, counted ``ai_use/skipped/...``.
    """

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.crawler, self.stats = crawler, crawler.stats
        self.skip = frozenset(s.getlist("AI_USE_SKIP"))
        self.fetch_tdmrep = s.getbool("AI_USE_TDMREP") or bool(self.skip)
        self.content_signals: dict[str, dict[str, str]] = {}  # host -> its robots.txt Content-Signal
        self.tdmrep: dict[str, TdmRep | None | Deferred] = {}  # netloc -> its rules (None: no file)
        crawler.signals.connect(self.host_signals, signal=crawl_signals.ai_signals)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AiSignalsMiddleware:
        return cls(crawler)

    def host_signals(self, host: str, source: str, values: dict[str, str]) -> None:
        if source == "robots.txt":  # kept for the hosts that say something (a broad crawl meets millions)
            if values:
                self.content_signals[host] = values
            else:
                self.content_signals.pop(host, None)

    async def process_request(self, request: Request, spider: Any = None) -> Request | None:
        if (request.meta.get("dont_obey_robotstxt") or "sitemap_level" in request.meta
                or not request.url.startswith(("http:", "https:"))):
            return None  # robots.txt, tdmrep.json and sitemaps are the publisher's own signals
        parts = urlparse_cached(request)
        signals = {f"robots.txt:{k}": v for k, v in self.content_signals.get(parts.hostname or "", {}).items()}
        if self.fetch_tdmrep:
            fresh = parts.netloc not in self.tdmrep
            rules = await self._tdmrep(parts)
            if fresh:
                return request.replace(dont_filter=True)  # that fetch was this host's visit
            if rules is not None:
                path = parts.path + (f"?{parts.query}" if parts.query else "")
                signals.update((f"tdmrep.json:{k}", v) for k, v in rules.match(path).items())
        if signals:
            request.meta["ai_signals"] = signals
            self._refuse(signals, "before_fetch")
        return None

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        header = header_signals((k.decode("latin-1"), v.decode("latin-1"))
                                for k, values in response.headers.items() if k.lower().startswith(b"tdm-")
                                for v in values)
        if header:
            signals = {**request.meta.get("ai_signals", {}), **{f"header:{k}": v for k, v in header.items()}}
            request.meta["ai_signals"] = signals
            self._refuse(signals, "after_fetch")
        return response

    def _refuse(self, signals: dict[str, str], when: str) -> None:
        reserved = sorted(reserved_uses(signals) & self.skip)
        if reserved:
            self.stats.inc_value(f"ai_use/skipped/{when}")
            raise IgnoreRequest(f"{RESERVED} ({', '.join(reserved)})")

    async def _tdmrep(self, parts: SplitResult) -> TdmRep | None:
        """The host's rules: fetched on first need; a request that comes meanwhile waits for them."""
        netloc = parts.netloc
        if netloc not in self.tdmrep:
            waiting = self.tdmrep[netloc] = Deferred()
            rules = await self._fetch_tdmrep(parts)
            self.tdmrep[netloc] = rules
            waiting.callback(rules)
            return rules
        known = self.tdmrep[netloc]
        return await maybe_deferred_to_future(known) if isinstance(known, Deferred) else known

    async def _fetch_tdmrep(self, parts: SplitResult) -> TdmRep | None:
        request = Request(f"{parts.scheme}://{parts.netloc}{TDMREP_PATH}", callback=NO_CALLBACK,
                          meta={"dont_obey_robotstxt": True, "dont_retry": True, "redirect_ttl": 5})
        rules, duration = None, None
        try:
            response = await self.crawler.engine.download_async(request)
            duration = response.meta.get("download_latency")
            self.stats.inc_value(f"ai_use/tdmrep_status/{response.status}")
            if response.status == 200:
                rules = TdmRep(response.body)
        except ValueError as exc:
            self.stats.inc_value("ai_use/tdmrep_unreadable")
            logger.info("tdmrep.json of %s unreadable (%s): no rules", parts.netloc, exc)
        except Exception as exc:  # noqa: BLE001 - unreachable or refused: no rules, as for a 404
            self.stats.inc_value("ai_use/tdmrep_failed")
            logger.info("tdmrep.json of %s not fetched (%s): no rules", parts.netloc, exc)
        host = parts.hostname or ""
        self.crawler.signals.send_catch_log(crawl_signals.side_fetched, host=host, duration=duration)
        if rules is not None:
            summary = {"rules": json.dumps([{"location": loc, **v} for loc, _, v in rules.rules])[:4000],
                       "any-reservation": "1" if rules.reserves_any else "0"}
            self.crawler.signals.send_catch_log(crawl_signals.ai_signals, host=host, source="tdmrep.json",
                                                values=summary)
        return rules
