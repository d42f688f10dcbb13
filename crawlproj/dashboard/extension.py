"""The live dashboard as a Scrapy extension: served by the crawl process itself."""

from __future__ import annotations

import logging
import sqlite3
import time
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import task

from .. import signals as crawl_signals
from ..changes.atom import atom_feed
from ..distributed.workers import worker_id
from ..store import settings_store
from ..store.changes import read_changes
from ..urls import InvalidURL, canonicalize
from .board import HostBoard, RateSeries, snapshot
from .server import DashboardResource, listen, tokens_from_settings

logger = logging.getLogger(__name__)


class Dashboard:
    """Serves a live page of the crawl on ``DASHBOARD_HOST:DASHBOARD_PORT`` (127.0.0.1 by default).

    Promises: every ``DASHBOARD_INTERVAL`` seconds a snapshot (pages/s, errors by
    kind, frontier sizes, per-host politeness state, duplicate/revisit/render
    rates, servers by location) goes to every open event stream; nothing is
    served without a token (``DASHBOARD_TOKEN`` may pause, resume and stop the
    crawl; ``DASHBOARD_READONLY_TOKEN`` may only look; either, when empty, is
    made up and logged). With ``DASHBOARD_REDIS`` each worker also publishes
    its snapshot to Redis and every worker's page lists all workers. A port in
    use falls back to any free port; the URLs (with tokens) are logged and, with
    ``DASHBOARD_URL_FILE``, written there (mode 0600).
    """

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        if not s.getbool("DASHBOARD_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.stats = crawler.stats
        self.host = s.get("DASHBOARD_HOST")
        self.port = s.getint("DASHBOARD_PORT")
        self.tokens = tokens_from_settings(s)
        self.interval = s.getfloat("DASHBOARD_INTERVAL")
        self.max_hosts = s.getint("DASHBOARD_MAX_HOSTS")
        self.url_file = s.get("DASHBOARD_URL_FILE")
        self.worker = worker_id(s)
        self.redis = None
        if s.getbool("DASHBOARD_REDIS"):  # (Redis: the distributed extra, imported only then)
            from ..distributed import connection
            from . import cluster

            self.redis = connection.from_settings(s)
            self.redis_key = cluster.key_prefix(s.get("REDIS_PREFIX"))
        self.board = HostBoard(s.getint("DASHBOARD_HOSTS_KEPT"))
        self.series = RateSeries.ten_minutes(self.interval)
        self.store_path = settings_store(s)
        self._changes_db: sqlite3.Connection | None = None
        self.resource = DashboardResource(*self.tokens, control=self.control, seed=self.seed,
                                          changes_feed=self.changes_feed)
        self.started = time.monotonic()
        self.finished = False
        self._port: Any = None
        self._loop: task.LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Dashboard:
        ext = cls(crawler)
        sig = crawler.signals
        sig.connect(ext.spider_opened, signal=signals.spider_opened)
        sig.connect(ext.spider_closed, signal=signals.spider_closed)
        sig.connect(ext.response_received, signal=signals.response_received)
        sig.connect(ext.host_error, signal=crawl_signals.host_error)
        sig.connect(ext.robots_fetched, signal=crawl_signals.robots_fetched)
        return ext

    # -- signals -----------------------------------------------------------
    def spider_opened(self, spider: Any) -> None:
        self._port, urls = listen(self.resource, self.host, self.port, self.tokens, self.url_file)
        self.stats.set_value("dashboard/port", urls["port"])
        self._loop = task.LoopingCall(self.tick)
        self._loop.start(self.interval, now=True)

    def spider_closed(self, spider: Any, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.finished = True
        self.tick()
        self.resource.close_streams()
        if self._port is not None:
            self._port.stopListening()

    def response_received(self, response: Any, request: Any, spider: Any = None) -> None:
        host = urlparse_cached(response).hostname or ""
        if host and not request.url.endswith("/robots.txt"):
            ip = response.ip_address
            self.board.response(host, response.status, str(ip) if ip is not None else None, time.monotonic())

    def host_error(self, host: str, kind: str) -> None:
        self.board.error(host, kind, time.monotonic())

    def robots_fetched(self, host: str, status: int | None, crawl_delay: float | None = None,
                       duration: float | None = None) -> None:
        self.board.robots(host, status, time.monotonic())

    # -- snapshots -----------------------------------------------------------
    def tick(self) -> None:
        now = time.monotonic()
        stats = self.stats.get_stats()
        self.series.tick(now, stats.get("store/pages", 0))  # pages stored a second, as the console's rate
        hosts = self.board.busiest(self.max_hosts)
        described: dict[str, dict] = {}
        for _, answer in self.crawler.signals.send_catch_log(crawl_signals.describe_hosts, hosts=hosts):
            for host, fields in (answer or {}).items():
                described.setdefault(host, {}).update(fields)
        engine = self.crawler.engine
        view = snapshot(stats, self.series, self.board, hosts, described, now,
                        spider=getattr(self.crawler.spider, "name", None), worker=self.worker, time=time.time(),
                        uptime=round(now - self.started, 1), paused=bool(engine and engine.paused),
                        finished=self.finished)
        view["changes"] = {"recorded": stats.get("changes/recorded", 0),
                           "meaningful": stats.get("changes/meaningful", 0), "noise": stats.get("changes/noise", 0),
                           "recent": [{"url": c.url, "at": c.at, "reason": c.reason, "similarity": c.similarity,
                                       "lines_added": c.lines_added, "lines_removed": c.lines_removed}
                                      for c in self.recent_changes(10, noise=False)]}
        if self.redis is not None:
            view["workers"] = self._cluster(view)
        self.resource.publish(view)

    def _cluster(self, view: dict) -> list[dict] | None:
        """Publish this worker's snapshot to Redis and read every live worker's."""
        import redis

        from . import cluster

        try:
            cluster.publish(self.redis, self.redis_key, view, ttl=max(10, int(5 * self.interval)))
        except redis.RedisError as exc:
            logger.warning("dashboard: cannot publish to Redis: %s", exc)
        return cluster.read_workers(self.redis, self.redis_key, view["time"])

    # -- changes (the store's change records) ------------------------------------
    def recent_changes(self, limit: int, noise: bool) -> list:
        """The store's latest changes, newest first (none while the store has no file yet)."""
        try:
            if self._changes_db is None:
                self._changes_db = sqlite3.connect(f"file:{self.store_path}?mode=ro", uri=True,
                                                   check_same_thread=False, timeout=1)
            return read_changes(self._changes_db, meaningful=not noise, limit=limit, newest_first=True)
        except sqlite3.Error:
            self._changes_db = None
            return []

    def changes_feed(self, uri: str, noise: bool) -> bytes:
        base = f"http://{self.host}:{self._port.getHost().port}" if self._port is not None else ""
        return atom_feed(self.recent_changes(100, noise), base + uri, now=time.time())

    # -- the operator's controls -------------------------------------------------
    def seed(self, urls: list[str]) -> dict:
        """Add ``urls`` to the running crawl (``scrapy seed --dashboard``): each goes through
        canonicalisation, the spider's scope, the URL-seen filter, robots.txt and the frontier
        like a link found on a page. Returns what was added and what was refused, and why."""
        spider, engine = self.crawler.spider, self.crawler.engine
        if spider is None or engine is None or self.finished:
            raise ValueError("the crawl is not running")
        added, refused = [], {}
        for raw in urls:
            try:
                url = canonicalize(raw)
            except InvalidURL as exc:
                refused[raw] = exc.reason
                continue
            reason = spider.scope.refuses(url) if getattr(spider, "scope", None) is not None else None
            if reason:
                refused[raw] = f"out of scope ({reason})"
                continue
            engine.crawl(spider.request(url, meta={"depth": 0}))
            added.append(url)
        self.stats.inc_value("dashboard/seeded", len(added))
        logger.info("dashboard: the operator added %d URLs (%d refused)", len(added), len(refused))
        return {"added": len(added), "refused": refused}

    def control(self, action: str) -> str:
        engine = self.crawler.engine
        if engine is None:
            raise ValueError("the crawl is not running")
        if action == "pause":
            engine.pause()
        elif action == "resume":
            engine.unpause()
        elif action == "stop":
            deferred_from_coro(engine.close_spider_async(reason="dashboard_stop"))
        else:
            raise ValueError(f"unknown action {action!r}: pause, resume or stop")
        logger.warning("dashboard: the operator asked to %s the crawl", action)
        self.stats.inc_value(f"dashboard/{action}")
        self.tick()
        return action
