"""robots.txt with RFC 9309 status handling and a cache TTL (a downloader middleware).

Every decision is :func:`crawlproj.politeness.robots.is_allowed`'s, through
:class:`~crawlproj.politeness.robots.Rfc9309RobotParser` (Scrapy's ``ROBOTSTXT_PARSER``):
RFC 9309's reading of the file's groups and product tokens, with protego matching the paths.

Scrapy's stock middleware parses whatever body comes back, so a 503 page reads
as "allow everything". RFC 9309 says otherwise: a 4xx robots.txt means no
rules (allow all); a 5xx, or an unreachable robots.txt, means the whole host is
disallowed. Each answer is announced with :data:`crawlproj.signals.robots_fetched`.

Scrapy keeps a robots.txt for the whole crawl. Here each host's copy expires
after ``ROBOTSTXT_TTL`` (6 h: the Waseda crawler re-read it every 24 h, drew complaints
from sites whose changes were ignored, and settled on 6 h); a 5xx or
unreachable answer expires after ``ROBOTSTXT_ERROR_TTL``, so the host is asked
again later. The next request to the host after expiry fetches it again first,
inside the host's politeness like any visit. At most 5 redirects are followed
(RFC 9309); beyond that the file counts as unavailable (allow all). Each redirect hop is a
visit of its own: the request is sent back to the frontier, and the next hop is fetched when
the host's turn comes again, so a chain of hops keeps the host's interval (they were once
followed on the spot, 1.3 ms apart).
"""

from __future__ import annotations

import itertools
import logging
import time
from urllib.parse import urljoin, urlsplit

from scrapy import signals as scrapy_signals
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import task
from twisted.internet.defer import Deferred

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as ScrapyRobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request, Response
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import RobotParser
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler

from .. import signals
from ..politeness.robots import DISALLOW_ALL, Rfc9309RobotParser, robots_body

logger = logging.getLogger(__name__)

class RobotsTxtMiddleware(ScrapyRobotsTxtMiddleware):
    """Scrapy's robots.txt middleware, with RFC 9309 answers to 4xx, 5xx and failures."""

    MAX_REDIRECTS = 5

    def __init__(self, crawler) -> None:  # noqa: ANN001 - Scrapy Crawler
        super().__init__(crawler)
        self.ttl = crawler.settings.getfloat("ROBOTSTXT_TTL")
        self.error_ttl = crawler.settings.getfloat("ROBOTSTXT_ERROR_TTL")
        self._expires: dict[str, float] = {}  # netloc -> when its robots.txt must be fetched again
        self.cache_hosts = crawler.settings.getint("ROBOTSTXT_CACHE_HOSTS")
        self.follow_sitemaps = crawler.settings.getbool("ROBOTSTXT_SITEMAPS")
        self._sitemaps_read: dict[str, float] = {}  # netloc -> when its sitemaps were last queued
        self._sitemap_timer: task.LoopingCall | None = None
        self._next_hop: dict[str, tuple[str, int]] = {}  # netloc -> (robots.txt URL to fetch next, hops so far)
        if self.follow_sitemaps:
            crawler.signals.connect(self._start_sitemap_timer, signal=scrapy_signals.engine_started)
            crawler.signals.connect(self._stop_sitemap_timer, signal=scrapy_signals.engine_stopped)
        self.clock = time.monotonic

    async def process_request(self, request: Request, spider: object = None) -> Request | None:  # type: ignore[override]
        if request.meta.get("dont_obey_robotstxt") or not request.url.startswith(("http:", "https:")):
            return None
        netloc = urlparse_cached(request).netloc
        parser = self._parsers.get(netloc)
        if netloc in self._parsers and not isinstance(parser, Deferred) and self.clock() >= self._expires.get(
                netloc, float("inf")):
            del self._parsers[netloc]  # expired: this visit fetches it again
            self._stats.inc_value("robotstxt/refreshed")
        fresh = netloc not in self._parsers
        parser = await self.robot_parser(request)
        if netloc in self._next_hop:  # redirected: the next hop waits for the host's next turn
            return request.replace(dont_filter=True)
        self.process_request_2(parser, request)
        if fresh:
            # The robots.txt fetch was this host's visit: send the request back to the
            # frontier, which rests the host first (without holding a download slot).
            return request.replace(dont_filter=True)
        return None

    async def robot_parser(self, request: Request) -> RobotParser | None:
        # Scrapy's robots.txt request, except that it is never retried on the spot:
        # a retry would hit the host again with no interval (RFC 9309: 5xx means
        # "disallowed for now", to be asked again later).
        url = urlparse_cached(request)
        netloc = url.netloc
        if netloc not in self._parsers:
            self._forget_oldest()
            self._parsers[netloc] = Deferred()
            target, hops = self._next_hop.pop(netloc, (f"{url.scheme}://{netloc}/robots.txt", 0))
            robotsreq = Request(
                target,
                priority=self.DOWNLOAD_PRIORITY,
                meta={"dont_obey_robotstxt": True, "dont_retry": True, "dont_redirect": True},
                callback=NO_CALLBACK,
            )
            try:
                resp = await self.crawler.engine.download_async(robotsreq)
                location = resp.headers.get(b"Location") if 300 <= resp.status < 400 else None
                if location is not None and hops < self.MAX_REDIRECTS:
                    # The next hop is the host's next visit (the frontier rests it first).
                    self._next_hop[netloc] = (urljoin(target, location.decode("latin-1")), hops + 1)
                    self._stats.inc_value("robotstxt/redirects")
                    self.crawler.signals.send_catch_log(  # the host rests after it as after robots.txt
                        signals.side_fetched, host=url.hostname, duration=resp.meta.get("download_latency"))
                    waiting = self._parsers.pop(netloc)
                    waiting.callback(None)  # nobody else waits: one request of a host is in flight
                elif location is not None:  # more than 5 redirects: RFC 9309 "unavailable", like a 4xx
                    logger.info("robots.txt of %s: more than %d redirects; treated as unavailable (allow all)",
                                netloc, self.MAX_REDIRECTS)
                    await self._parse_robots(Response(robotsreq.url, status=404, request=robotsreq), netloc, request)
                else:
                    await self._parse_robots(resp, netloc, request)
            except IgnoreRequest as exc:  # refused by a middleware (address safety): as good as unreachable
                logger.info("robots.txt of %s refused (%s): host disallowed", netloc, exc)
                self._robots_error(exc, netloc)
            except Exception as exc:  # noqa: BLE001 - any failure means "unreachable"
                logger.info("robots.txt of %s unreachable (%s): host disallowed", netloc, exc)
                self._robots_error(exc, netloc)
            self._stats.inc_value("robotstxt/request_count")
        parser = self._parsers.get(netloc)
        if isinstance(parser, Deferred):
            return await maybe_deferred_to_future(parser)
        return parser

    def _forget_oldest(self) -> None:
        """Keep at most ``ROBOTSTXT_CACHE_HOSTS`` parsers: the oldest tenth go at once (fetches
        under way are kept), so the cost per host stays constant."""
        if len(self._parsers) < self.cache_hosts:
            return
        old = [n for n in itertools.islice(self._parsers, max(1, self.cache_hosts // 10))
               if not isinstance(self._parsers[n], Deferred)]
        for netloc in old:
            del self._parsers[netloc]
            self._expires.pop(netloc, None)
        self._stats.inc_value("robotstxt/forgotten", len(old))

    async def _parse_robots(self, response: Response, netloc: str, request: Request) -> None:
        self._expires[netloc] = self.clock() + (self.error_ttl if response.status >= 500 else self.ttl)
        response = response.replace(body=robots_body(response.status, response.body))
        await super()._parse_robots(response, netloc, request)
        parser = self._parsers[netloc]
        host, agent = urlsplit(f"//{netloc}").hostname, self._robotstxt_useragent or self._default_useragent
        rfc9309 = isinstance(parser, Rfc9309RobotParser)
        self.crawler.signals.send_catch_log(
            signals.robots_fetched, host=host, status=response.status,
            crawl_delay=parser.crawl_delay(agent) if rfc9309 else None,  # of our group, else of '*'
            duration=response.meta.get("download_latency"),
        )
        if rfc9309:  # what it says of AI use, even when nothing
            self.crawler.signals.send_catch_log(signals.ai_signals, host=host, source="robots.txt",
                                                values=parser.rules.content_signals(agent))
        if self.follow_sitemaps and netloc not in self._sitemaps_read:
            self._seed_sitemaps(netloc)

    def _seed_sitemaps(self, netloc: str) -> None:
        """The sitemaps the host's robots.txt lists seed the crawl (``ROBOTSTXT_SITEMAPS``), through
        the frontier; they are read again every ``ROBOTSTXT_TTL`` (:meth:`_read_sitemaps_again`)."""
        spider, parser = self.crawler.spider, self._parsers.get(netloc)
        self._sitemaps_read[netloc] = self.clock()
        if not hasattr(spider, "sitemap_request") or not isinstance(parser, Rfc9309RobotParser):
            return
        for raw in parser.sitemaps[:50]:  # a robots.txt listing thousands of sitemaps is not a seed list
            url = spider.canonical(raw)
            if url is None:
                continue
            self.crawler.engine.crawl(spider.sitemap_request(url))
            self._stats.inc_value("robotstxt/sitemaps_seeded")

    def _start_sitemap_timer(self) -> None:
        # Not at robots.txt's re-read: that comes only with a request for the host, and an
        # incremental crawl may have none due for days; the sitemaps are how it learns of changes.
        self._sitemap_timer = task.LoopingCall(self._read_sitemaps_again)
        self._sitemap_timer.start(max(1.0, min(self.ttl, 60.0)), now=False)

    def _stop_sitemap_timer(self) -> None:
        if self._sitemap_timer is not None and self._sitemap_timer.running:
            self._sitemap_timer.stop()

    def _read_sitemaps_again(self) -> None:
        """Queue again the sitemaps of every host whose sitemaps were queued ``ROBOTSTXT_TTL`` ago
        (robots.txt itself is re-read when the first of them reaches this middleware)."""
        now = self.clock()
        for netloc in [n for n, at in self._sitemaps_read.items() if now - at >= self.ttl]:
            self._seed_sitemaps(netloc)

    def _robots_error(self, exc: Exception, netloc: str) -> None:
        # Unreachable robots.txt: disallow the host rather than crawl blind
        # (Scrapy answers None, which allows everything, to the waiting requests too).
        if not isinstance(exc, IgnoreRequest):
            from ..fetch_errors import error_kind

            self._stats.inc_value(f"robotstxt/exception_count/{type(exc)}")
            # Why the host was not crawled, when that is why the crawl stored nothing (the console),
            # and a failed attempt on the host like any other (the store's host_errors, the dashboard).
            kind = error_kind(exc)
            self._stats.inc_value(f"robotstxt/unreachable/{kind}")
            self.crawler.signals.send_catch_log(signals.host_error, host=urlsplit(f"//{netloc}").hostname or netloc,
                                                kind=kind)
        waiting = self._parsers[netloc]
        self._expires[netloc] = self.clock() + self.error_ttl
        parser = build_from_crawler(self._parserimpl, self.crawler, DISALLOW_ALL)
        self._parsers[netloc] = parser
        if isinstance(waiting, Deferred):
            waiting.callback(parser)
        self.crawler.signals.send_catch_log(signals.robots_fetched, host=urlsplit(f"//{netloc}").hostname, status=None)
