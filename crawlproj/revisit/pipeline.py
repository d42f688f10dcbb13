"""The revisit item pipeline: records every visit in the long-term queue (the Scrapy adapter
of :mod:`.state`, :mod:`.queue` and :class:`~.schedule.ServerLoad`)."""

from __future__ import annotations

import hashlib
import logging
import random
import re
import time
from dataclasses import replace
from email.utils import parsedate_to_datetime

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread

from .. import signals as crawl_signals
from ..changes.watches import WatchList
from ..checks import float_pair
from ..content.extract import is_html
from ..content.main_text import main_text
from ..content.near_duplicates import content_hash
from ..items import FetchError, PageItem, SitemapUrls, Skipped
from ..remote_calls import RemoteCalls
from ..store import settings_store
from .estimator import DateCheck, GroupPrior, RateGrid
from .schedule import DAY, RevisitPolicy, ServerLoad
from .state import CrawlClock, Planner, UrlState

logger = logging.getLogger(__name__)

#: After relief a server's schedule asks for one fetch per polite interval times this:
#: headroom, so one page's next interval does not overload it again at once.
HEADROOM = 1.1
#: Sitemap lastmods kept for URLs not visited yet, at most (a few sitemaps' worth).
LASTMODS_KEPT = 1_000_000
#: Pages the priors are fitted to at each replan, at most.
PRIOR_SAMPLE = 5000
#: A watched page falls due this share of its watch's interval after its visit: the frontier's
#: queueing (a revisit goes out a little after it is due) then still fits within the interval asked.
WATCH_EARLY = 0.8
#: Statuses that mean a page is gone: it leaves the revisit queue.
GONE = (404, 410)


def open_revisit_queue(settings):
    """The long-term queue: the class ``REVISIT_QUEUE_CLASS`` names (SQLite beside the store, or
    Redis), built by its ``from_settings``."""
    return load_object(settings.get("REVISIT_QUEUE_CLASS")).from_settings(settings)


def planner_from_settings(settings) -> Planner:
    low, high = float_pair(settings, "REVISIT_FIRST_INTERVAL")
    policy = RevisitPolicy(
        min_interval=settings.getfloat("REVISIT_MIN_INTERVAL"), max_interval=settings.getfloat("REVISIT_MAX_INTERVAL"),
        first_interval=(low, high), backoff=settings.getfloat("REVISIT_BACKOFF"),
        shrink=settings.getfloat("REVISIT_SHRINK"), factor=settings.getfloat("REVISIT_FACTOR"),
        min_change=settings.getfloat("REVISIT_MIN_CHANGE"), probes=settings.getint("REVISIT_PROBES"))
    return Planner(policy, settings.get("REVISIT_SCHEDULE"), random.Random())


def _header(item: PageItem, name: str) -> str | None:
    name = name.lower()
    return next((v for k, v in item.response_headers if k.lower() == name), None)


class RevisitPipeline:
    """Keeps each fetched URL's change history and next due time in ``REVISIT_DB``.

    A page seen for the first time gets a first interval; a page seen again is a
    visit: unchanged when the server answered 304, or when the hash of what
    ``REVISIT_CHANGE`` compares (the main text by default, so a rotating ad or
    timestamp is not a change) is the stored one. Its next interval comes from
    :class:`~.state.Planner`. A page gone (404, 410), forbidden or ``noindex``
    leaves the queue; a failed revisit is retried after a growing interval. A sitemap's
    ``<lastmod>`` (:class:`~crawlproj.items.SitemapUrls`) is kept in the page's state, and makes
    a tracked page due at once when it is after the page's last visit.

    Every server's load index ``L = sum 1/T`` is kept as intervals change. When
    ``1/L`` falls below the server's polite interval (what the frontier makes it
    rest, plus the fetch), the server is overloaded: its pages' intervals are
    stretched in proportion, or its least valuable (deepest) pages dropped
    (``REVISIT_OVERLOAD``); logged and counted under ``revisit/overload*``.

    With the ``budget`` schedule, ``mu`` is replanned every ``REVISIT_REPLAN_SECONDS``
    from a sample of the estimated rates, for ``REVISIT_BUDGET`` revisits a day (0:
    ``REVISIT_SHARE`` of the servers' polite capacity), steered by the last period's use.
    Writes commit just before each store commit (:data:`crawlproj.signals.store_committing`).
    """

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        if not s.getbool("REVISIT_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.closed = False
        self.stats = crawler.stats
        self.clock = CrawlClock(s.getfloat("REVISIT_TIME_SCALE"))
        self.planner = planner_from_settings(s)
        self.change = s.get("REVISIT_CHANGE")
        self.ignore = [re.compile(p) for p in s.getlist("REVISIT_IGNORE_PATTERNS")]
        self.overload_mode = s.get("REVISIT_OVERLOAD")
        self.budget_per_day = s.getfloat("REVISIT_BUDGET")
        self.share = s.getfloat("REVISIT_SHARE")
        self.replan_every = s.getfloat("REVISIT_REPLAN_SECONDS")
        self.sample_size = s.getint("REVISIT_RATE_SAMPLE")
        self.min_interval = s.getfloat("MIN_INTERVAL")
        self.queue = open_revisit_queue(s)
        self._remote = RemoteCalls("revisit") if getattr(self.queue, "remote", False) else None
        self.loads: dict[str, float] = dict(self.queue.host_loads())
        self.polite: dict[str, float] = {}  # host -> crawl-clock seconds between its fetches, at most
        self._warned: dict[str, float] = {}
        self._last_replan = time.monotonic()
        self._revisits_since = 0  # revisits recorded since the last replan
        self._target: float | None = None  # budget asked of the allocation (steered)
        self._drawing: Deferred | None = None  # a replan's sample being drawn in a thread
        self.lastmods: dict[str, float] = {}  # sitemap lastmods of URLs not visited yet
        self.dates = DateCheck()  # whose Last-Modified dates are believed
        self.watches = WatchList(settings_store(s), s.getfloat("WATCH_REFRESH_SECONDS"))
        self._watch_version = 0  # the watch list's version last applied to the queue
        crawler.signals.connect(self.commit, signal=crawl_signals.store_committing)
        crawler.signals.connect(self.describe_hosts, signal=crawl_signals.describe_hosts)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RevisitPipeline:
        return cls(crawler)

    def open_spider(self, spider: Spider | None = None) -> None:
        logger.info("revisit queue %s: %d URLs tracked (%s schedule)", self.queue.path, self.queue.count(),
                    self.planner.schedule)
        self.stats.set_value("revisit/tracked", self.queue.count())  # kept as rows come and go
        self.replan()

    def close_spider(self, spider: Spider | None = None) -> Deferred | None:
        self.closed = True
        if self._remote is not None:
            self._remote.close()
        if self._drawing is not None:  # the queue (and its Redis client) outlives the thread's draw
            return self._drawing.addBoth(lambda _: self.queue.close())
        self.queue.close()
        return None

    # -- visits ------------------------------------------------------------
    def process_item(self, item: object, spider: Spider | None = None) -> object:
        if isinstance(item, PageItem):
            if self._remote is not None:
                return self._remote_page(item)  # a coroutine, which Scrapy awaits
            self._page(item, self.queue.get(item.url))
        elif isinstance(item, FetchError):
            prev = self.queue.get(item.url)
            if prev is not None:
                self.stats.inc_value("revisit/failed")
                self._put(prev, self.planner.failed(prev, self.clock.now()))
        elif isinstance(item, Skipped):
            prev = self.queue.get(item.url)
            if prev is not None and item.reason != "sitemap":
                self.stats.inc_value(f"revisit/removed/{item.reason}")
                self._delete(prev)
        elif isinstance(item, SitemapUrls):
            self._sitemap(item)
        return item

    def _sitemap(self, item: SitemapUrls) -> None:
        """A sitemap's ``<lastmod>`` is change evidence: a tracked page it says changed since its
        last visit is due now; an untracked page's lastmod is kept for its first visit."""
        now = self.clock.now()
        for entry in item.entries:
            if entry.lastmod is None:
                continue
            prev = self.queue.get(entry.loc)
            if prev is None:
                if len(self.lastmods) < LASTMODS_KEPT:
                    self.lastmods[entry.loc] = entry.lastmod
                continue
            state = self.planner.sitemap_lastmod(prev, entry.lastmod, now, self.clock.scale)
            if state is not None:
                self.stats.inc_value("revisit/sitemap_lastmod")
                if state.rule == "lastmod":
                    self.stats.inc_value("revisit/due_by_lastmod")
                self._put(prev, state)

    def modified_at(self, item: PageItem, modified: str | None) -> float | None:
        """The page's last change (crawl clock) by its Last-Modified, when the host's dates are
        believed (:class:`~.estimator.DateCheck`), else None."""
        try:
            stamp = parsedate_to_datetime(modified).timestamp() if modified else None
        except (TypeError, ValueError, IndexError):
            stamp = None
        used = self.dates.observe(item.host, item.fetched_at, stamp)
        if stamp is not None:
            self.stats.inc_value("revisit/dates_used" if used is not None else "revisit/dates_refused")
        return None if used is None else used * self.clock.scale

    async def _remote_page(self, item: PageItem) -> PageItem:
        """A page, with a shared queue: its state so far is read on a thread of its own, not on the
        reactor's (a tenth of a worker's main thread in a two-worker crawl, py-spy)."""
        held, prev = self.queue.buffered(item.url)
        if not held:
            stored = await self._remote.run(self.queue.stored, item.url)
            held, prev = self.queue.buffered(item.url)  # written meanwhile (the same URL again): the newer
            prev = prev if held else stored
        self._page(item, prev)
        return item

    def _page(self, item: PageItem, prev: UrlState | None) -> None:
        now = self.clock.now()
        if prev is not None:  # a revisit, not a new page: the console and dashboard count them apart
            self.stats.inc_value("revisit/visits")
        etag, modified = _header(item, "ETag"), _header(item, "Last-Modified")
        modified_at = self.modified_at(item, modified)
        if item.not_modified:
            if prev is None:
                return
            self.stats.inc_value("revisit/not_modified")
            state = self.planner.visit(prev, now, False, not_modified=True, etag=etag, last_modified=modified,
                                       modified_at=modified_at)
        elif 200 <= item.status < 300:
            digest = self.change_hash(item)
            if prev is None:
                self.stats.inc_value("revisit/first_visits")
                self.stats.inc_value("revisit/tracked")
                state = self.planner.first(item.url, item.host, now, item.depth, digest, etag, modified,
                                           self.lastmods.pop(item.url, None), modified_at)
            else:
                changed = digest != prev.content_hash
                self.stats.inc_value("revisit/changed" if changed else "revisit/unchanged")
                state = self.planner.visit(prev, now, changed, content_hash=digest, etag=etag, last_modified=modified,
                                           modified_at=modified_at)
        elif prev is None:
            return
        elif item.status in GONE:
            self.stats.inc_value("revisit/removed/gone")
            self._delete(prev)
            return
        else:
            self.stats.inc_value("revisit/failed")
            state = self.planner.failed(prev, now)
        if item.document is not None and item.document.kind == "feed" and state.kind != "feed":
            state = replace(state, kind="feed")
        if prev is not None:
            self._revisits_since += 1
        self.stats.inc_value(f"revisit/rule/{state.rule}")
        if state.source:
            self.stats.inc_value(f"revisit/source/{state.source}")
        if item.fetch_duration is not None:
            self.polite[item.host] = self._polite_interval(item.host, item.fetch_duration)
        self._put(prev, self._watched(state))

    def _watched(self, state: UrlState) -> UrlState:
        """A watched page's state revisited at least as often as its watch asks (``--every``)."""
        watch = self.watches.get(state.url)
        if watch is None or not watch.every or state.interval <= watch.every * WATCH_EARLY:
            return state
        interval = watch.every * WATCH_EARLY
        return replace(state, interval=interval, rule="watch",
                       next_due=min(state.next_due, state.history.last_access + interval))

    def _apply_watches(self) -> None:
        """Pages watched since the last commit, or watched more often: rescheduled now."""
        self.watches.all()
        if self.watches.version == self._watch_version:
            return
        self._watch_version = self.watches.version
        for url in self.watches.all():
            prev = self.queue.get(url)
            if prev is not None and (state := self._watched(prev)) is not prev:
                self.stats.inc_value("revisit/rule/watch")
                self._put(prev, state)

    def change_hash(self, item: PageItem) -> str:
        """The hash ``REVISIT_CHANGE`` compares between visits."""
        if item.document is not None and item.text_hash:  # a PDF's text, a feed's entries
            return item.text_hash  # (their bodies change with a generation date, a build date)
        if self.change == "body" or not is_html(item.content_type):
            return item.content_hash
        if item.text_hash and not self.ignore:
            return item.text_hash  # the content pipeline's hash of the same main text
        text = main_text(item.body, item.charset)
        for pattern in self.ignore:
            text = pattern.sub("", text)
        return content_hash(text) if text.strip() else hashlib.sha256(item.body).hexdigest()

    def _polite_interval(self, host: str, duration: float) -> float:
        """Crawl-clock seconds from one fetch of ``host`` to the next, at least (the frontier's rest
        after a fetch this long, plus the fetch)."""
        answers = self.crawler.signals.send_catch_log(crawl_signals.rest_after, host=host, duration=duration)
        rests = [r for _, r in answers if isinstance(r, (int, float))]
        return self.clock.scale * (duration + (max(rests) if rests else self.min_interval))

    # -- the load index ----------------------------------------------------
    def describe_hosts(self, hosts: list[str]) -> dict[str, dict]:
        """Each known server's load index ``L`` (revisits per crawl-clock second) and its polite
        interval, for the dashboard (answers :data:`crawlproj.signals.describe_hosts`)."""
        return {h: {"load_index": round(self.loads[h], 6), "polite_interval": self.polite.get(h)}
                for h in hosts if h in self.loads}

    def _put(self, prev: UrlState | None, state: UrlState) -> None:
        self.queue.put(state)
        if state.host in self.loads:
            load = self.loads[state.host] + 1.0 / state.interval - (1.0 / prev.interval if prev else 0.0)
        else:  # a host not loaded at start (new, or a queue that does not list them all): read it once
            load = sum(1.0 / s.interval for s in self.queue.host_states(state.host))
        self.loads[state.host] = load
        polite = self.polite.get(state.host)
        if polite is not None and load * polite > 1 + 1e-9:
            self._relieve(state.host, polite)

    def _delete(self, prev: UrlState) -> None:
        self.queue.delete(prev.url)
        self.stats.inc_value("revisit/tracked", -1)
        self.loads[prev.host] = max(0.0, self.loads.get(prev.host, 0.0) - 1.0 / prev.interval)

    def _relieve(self, host: str, polite: float) -> None:
        """Make ``host``'s schedule feasible: 1/L at least its polite interval (with headroom)."""
        states = {s.url: s for s in self.queue.host_states(host)}
        server = ServerLoad()
        for url, s in states.items():  # from the plans: a stretched interval stretched again would compound
            server.set(url, s.plan)
        required = server.required_interval
        value = {url: 1.0 / (1 + s.depth) for url, s in states.items()}  # shallower pages are worth more
        changed, dropped = server.relieve(polite * HEADROOM, self.overload_mode, value)
        for url, interval in changed.items():
            s = states[url]
            watch = self.watches.get(url)
            if watch is not None and watch.every:  # a watch's interval is the user's: never stretched past it
                interval = min(interval, watch.every * WATCH_EARLY)
            self.queue.put(replace(s, interval=interval, planned=s.plan, next_due=s.history.last_access + interval,
                                   rule="stretched"))
        for url in dropped:
            self.queue.delete(url)
        self.stats.inc_value("revisit/tracked", -len(dropped))
        self.loads[host] = server.load
        self.stats.inc_value("revisit/overloads")
        self.stats.inc_value("revisit/overload_stretched", len(changed))
        self.stats.inc_value("revisit/overload_dropped", len(dropped))
        now = time.monotonic()
        if now - self._warned.get(host, -1e18) >= 600:  # once per server per 10 minutes
            self._warned[host] = now
            logger.warning("server %s overloaded: its %d pages need a fetch every %.1f s, its polite interval "
                           "is %.1f s (crawl clock); %s", host, len(states), required, polite,
                           f"{len(changed)} intervals stretched" if changed else f"{len(dropped)} pages dropped")

    # -- commits and the budget ---------------------------------------------
    def commit(self) -> None:
        if self.closed:  # the store's last flush at the close comes after ours
            return
        self._apply_watches()
        self.queue.commit()
        if self.planner.schedule == "budget" and time.monotonic() - self._last_replan >= self.replan_every:
            self.replan()

    def budget(self) -> float:
        """Revisits per crawl-clock second the schedule may ask for."""
        if self.budget_per_day > 0:
            return self.budget_per_day / DAY
        capacity = sum(1.0 / p for h, p in self.polite.items() if h in self.loads)
        return self.share * capacity

    def replan(self) -> None:
        """Divide the budget over the estimated rates again (``budget`` schedule)."""
        now = time.monotonic()
        elapsed = self.clock.scale * (now - self._last_replan)
        used = self._revisits_since / elapsed if elapsed > 0 else 0.0
        self._last_replan, self._revisits_since = now, 0
        budget = self.budget()
        if self.planner.schedule != "budget" or budget <= 0:
            return
        if self._target is None:
            self._target = budget
        elif used > 0:  # clamping and first intervals make use drift from the plan: steer it
            self._target = min(max(self._target * budget / used, 0.5 * budget), 2 * budget)
        self.stats.set_value("revisit/budget_per_day", round(budget * DAY, 3))
        from twisted.internet import reactor
        if getattr(self.queue, "samples_off_thread", False) and reactor.running:
            # The sample is thousands of rows read and decoded (round trips, for a shared queue)
            # and the fit numpy's: seconds a minute in a broad crawl, 0.1-0.2 s at 5,000 pages,
            # that would hold every host's next request. In a thread; set here when done.
            if self._drawing is None:
                self._drawing = d = deferToThread(self._draw)
                d.addCallback(self._fit)
                d.addErrback(lambda f: logger.error("revisit replan: %s", f.getErrorMessage()))
                d.addBoth(self._sampled)
            return
        self._fit(self._draw())

    def _draw(self) -> tuple[GroupPrior, RateGrid | None, float | None, int]:
        """The replan's random samples from the queue, states for the priors and rates for the
        budget, and what the planner makes of them: its new priors and ``mu`` (None: no rates)."""
        priors = self.queue.state_sample(min(self.sample_size, PRIOR_SAMPLE))
        rates, total = self.queue.rate_sample(self.sample_size)
        groups, grid = self.planner.fitted_priors(priors)
        mu = self.planner.planned_mu(rates, self._target * len(rates) / total) if rates else None
        return groups, grid, mu, self.queue.count()

    def _fit(self, drawn: tuple[GroupPrior, RateGrid | None, float | None, int]) -> None:
        groups, grid, mu, tracked = drawn
        if self.closed:
            return
        self.planner.use_priors(groups, grid)
        if mu is not None:
            self.planner.mu = mu
            self.stats.set_value("revisit/mu", mu)
        self.stats.set_value("revisit/tracked", tracked)

    def _sampled(self, _result=None) -> None:
        self._drawing = None
