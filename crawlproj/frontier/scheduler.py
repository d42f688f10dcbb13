"""The frontier as Scrapy's scheduler (the thin adapter over :mod:`.tiers`)."""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.core.scheduler import BaseScheduler
from scrapy.crawler import Crawler
from scrapy.dupefilters import BaseDupeFilter
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.request import request_from_dict
from twisted.internet import task

from .. import signals as crawl_signals
from ..ordering.persistence import OrderingSnapshots
from ..ordering.prioritizer import build_prioritizer
from ..politeness.hosts import Hold
from ..politeness.keys import PolitenessKeys, Ready, registered_domain
from ..politeness.opt_out import OptOutGate, OptOutSource
from ..politeness.hosts import host_politeness
from ..traps import SiteCap
from .entry import request_entry
from .completion import CompletionEstimator
from .domains import DomainBudget
from .figures import RuleCounts, frontier_figures, host_rows
from .journal import FrontierJournal, Record, fingerprint
from .outcomes import FetchOutcomes
from .protocol import Frontier
from .spill import SegmentStore, spill_factory
from .tiers import TwoTierFrontier
from .urlseen import key_of, mark_seen, url_key
from .wake import EngineWaker

logger = logging.getLogger(__name__)


def _descends(path: Any, cls: type) -> bool:
    """Whether the class a setting names is ``cls`` or built on it, by its ancestry: Scrapy's
    BaseScheduler's metaclass makes any scheduler a "subclass" of any other."""
    try:
        return cls in load_object(path).__mro__
    except (ImportError, NameError, ValueError, AttributeError, TypeError):
        return False


def require_partners(settings: Any) -> None:
    """Refuse, in one line, a frontier scheduler without what it stands on: crawlproj's settings
    (the add-on or ``crawlproj.defaults`` gives them) and the downloader that tells it when each
    fetch ends (without it the first host stays in flight for ever: a silent stall)."""
    from ..errors import SettingsError
    from .downloader import FrontierDownloader

    scheduler = settings.get("SCHEDULER")
    if not _descends(scheduler, FrontierScheduler):
        # An ordering other than breadth-first re-ranks the frontier's queues: no other scheduler has them.
        if (settings.get("PRIORITIZER") or "bfs") != "bfs":
            raise SettingsError("PRIORITIZER", settings.get("PRIORITIZER"), "orders the frontier's queues: it needs "
                                "SCHEDULER = 'crawlproj.frontier.scheduler.FrontierScheduler'")
        return
    if settings.get("FRONTIER_LEVELS") is None:
        raise SettingsError("SCHEDULER", scheduler, "the frontier reads crawlproj's settings: enable the add-on, "
                                                    "ADDONS = {'crawlproj.addon.Crawlproj': 0}")
    downloader = settings.get("DOWNLOADER")
    if not _descends(downloader, FrontierDownloader):
        raise SettingsError("DOWNLOADER", downloader, f"{scheduler} needs its partner "
                                                      "DOWNLOADER = 'crawlproj.frontier.downloader.FrontierDownloader'")


#: Set on a request's meta when the frontier hands it out: a request that comes back with it
#: (dont_filter) was sent back unfetched.
HANDED = "frontier_handed"


#: Past its due time by more than this, a request is counted as dispatched late.
LATE = 0.01


class FrontierScheduler(BaseScheduler):
    """Hands the engine only requests whose politeness key is due.

    Promises: never two in-flight requests per key; a key goes again no sooner
    than its last fetch's finish time plus the policy's interval; when nothing
    is due it wakes the engine at the earliest due time (Scrapy would otherwise
    look again only after a download or its 5 s heartbeat). Scrapy's own slot
    delay must stay off (``DOWNLOAD_DELAY = 0``): politeness lives here.
    """

    def __init__(self, crawler: Crawler, dupefilter: BaseDupeFilter) -> None:
        s = crawler.settings
        self.crawler, self.stats, self.df = crawler, crawler.stats, dupefilter
        self.clock = time.monotonic
        self.hosts = host_politeness(crawler)  # each key's intervals and holds, shared with the Waseda middleware
        self._rule_counts = RuleCounts()
        self.site_cap = SiteCap(s.getint("MAX_PAGES_PER_HOST"), s.getint("HOST_STATE_MEMORY"))
        self.keys = PolitenessKeys(s.get("FRONTIER_KEY"), s.getint("PER_IP_CONCURRENCY"),
                                   s.getfloat("PER_IP_RATE"))  # host -> key
        levels = s.getint("FRONTIER_LEVELS")
        jobdir = s.get("JOBDIR")
        self.journal = self._build_journal(jobdir)
        self.spill: SegmentStore | None = None
        self.prioritizer = build_prioritizer(s, levels)
        self.frontier: Frontier = self._build_frontier(s, levels)
        self.domains = self._build_domains(s)
        self._handed_hosts: dict[int, str] = {}  # id(request) -> its host, until its fetch ends
        self._capped: set[str] = set()  # hosts whose pages are mostly copies: nothing more is fetched
        self.copy_rest = s.getfloat("COPY_HOST_REST")
        self.ordering = OrderingSnapshots(self.prioritizer, jobdir, s.getfloat("ORDERING_SAVE_SECONDS"))
        self.opt_out = OptOutGate(OptOutSource(s.get("OPT_OUT_FILE"), *self._opt_out_redis(s)),
                                  s.getfloat("OPT_OUT_RELOAD_SECONDS"), self.stats)
        # Re-prioritising waiting URLs needs a frontier that asks (Redis keeps a URL's level as pushed).
        self._promoting = self.prioritizer.dynamic and self.frontier.reprioritises
        self.waker = EngineWaker(crawler, self.clock)
        self.outcomes = FetchOutcomes(crawler, self.frontier, self.hosts, self.keys, self.clock, self.waker.at)
        self.completion = CompletionEstimator(s.getfloat("ESTIMATE_WINDOW"))
        self._stats_loop = task.LoopingCall(self._update_stats)
        # Its own loop: on the stats loop's second, a list reloaded every 0.2 s was read once a
        # second, and an opted-out host took six more requests in the meantime.
        self._opt_out_loop = task.LoopingCall(self.opt_out.reload_if_due)
        self._far_wait_said = float("-inf")  # when the crawl last said it waits only on far rests
        self._backlogged: list[Any] = []  # fetch_backlog_test answers: busy() -> bool
        self._held_since: float | None = None  # since when they have held every request back
        self.spider: Spider | None = None

    def _build_journal(self, jobdir: str | None) -> FrontierJournal | None:
        """The resume log in ``JOBDIR/frontier`` (none without a JOBDIR)."""
        return FrontierJournal(os.path.join(jobdir, "frontier")) if jobdir else None

    def _build_frontier(self, s: Any, levels: int) -> Frontier:
        """The local two-tier frontier, its queues' middles spilled to disk."""
        extra: dict[str, Any] = {}
        self.spill = SegmentStore.from_settings(s)
        if self.spill is not None:
            extra["queue_factory"] = spill_factory(self.spill, s.getint("FRONTIER_FRONT_BUFFER"),
                                                   s.getint("FRONTIER_BACK_BUFFER"))
        if self.prioritizer.dynamic:  # an entry's level may improve while it waits
            extra["relevel"] = self._relevel
        if self.prioritizer.focused and s.getbool("TOPICAL_FOCUS"):  # off-topic links sink to the last level
            extra.update(hold_level=self.prioritizer.levels - 1, hold_wait=s.getfloat("TOPICAL_FOCUS_WAIT"))
        active = s.getint("FRONTIER_ACTIVE_KEYS") or 3 * s.getint("CONCURRENT_REQUESTS")
        return TwoTierFrontier(levels=levels, active_target=active, max_active=s.getint("FRONTIER_MAX_ACTIVE_KEYS"),
                               bias=s.getfloat("FRONTIER_BIAS"), group_cap=self.keys.per_ip,
                               group_rate=self.keys.per_ip_rate, domain_cap=s.getint("DOMAIN_CONCURRENCY"),
                               domain_of=registered_domain, idle_keys=s.getint("HOST_STATE_MEMORY"), **extra)

    def _build_domains(self, s: Any) -> DomainBudget:
        """The budgets per registered domain, their overflows spilled with the frontier's queues."""
        factory = spill_factory(self.spill, s.getint("FRONTIER_BACK_BUFFER"), s.getint("FRONTIER_BACK_BUFFER")) \
            if self.spill is not None else None
        return DomainBudget(s.getint("DOMAIN_MAX_HOSTS"), s.getint("MAX_PAGES_PER_DOMAIN"),
                            s.getint("DOMAIN_ACTIVE_HOSTS"), **({"queue_factory": factory} if factory else {}))

    def _opt_out_redis(self, s: Any) -> tuple[Any, str]:
        """The Redis set of the opt-out list (distributed mode), or none."""
        return None, ""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierScheduler:
        require_partners(crawler.settings)
        dupefilter = build_from_crawler(load_object(crawler.settings["DUPEFILTER_CLASS"]), crawler)
        return cls(crawler, dupefilter)

    # -- Scrapy's scheduler interface ------------------------------------
    def open(self, spider: Spider) -> None:
        self.spider = spider
        sig = self.crawler.signals
        sig.connect(self._pages_committed, signal=crawl_signals.pages_committed)
        sig.connect(self._settled, signal=crawl_signals.request_settled)
        sig.connect(self.rest_after, signal=crawl_signals.rest_after)
        sig.connect(self.describe_hosts, signal=crawl_signals.describe_hosts)
        sig.connect(self.url_seen_test, signal=crawl_signals.url_seen_test)
        sig.connect(self.urls_seen_test, signal=crawl_signals.urls_seen_test)
        sig.connect(self.host_admission_test, signal=crawl_signals.host_admission_test)
        sig.connect(self._fetch_finished, signal=crawl_signals.fetch_finished)
        sig.connect(self.copy_host, signal=crawl_signals.copy_host)
        self.df.open()
        self.opt_out.reload()
        self._backlogged = [test for _, test in sig.send_catch_log(crawl_signals.fetch_backlog_test) if callable(test)]
        restored = self.ordering.restore()
        if restored is not None:
            self.stats.set_value("ordering/restored", restored)
        if self.journal is not None:
            self._resume()
        self._stats_loop.start(1.0, now=False)
        self._opt_out_loop.start(self.opt_out.every, now=False)

    def close(self, reason: str) -> None:
        for loop in (self._stats_loop, self._opt_out_loop):
            if loop.running:
                loop.stop()
        self.waker.cancel()
        self._update_stats(final=True)
        self.ordering.save()
        self.df.close(reason)
        if self.journal is not None:
            self.journal.close()
        if self.spill is not None:
            self.spill.close()

    def has_pending_requests(self) -> bool:
        return self.frontier.has_pending() or bool(self.keys.waiting) or bool(self.domains.overflowed)

    def __len__(self) -> int:
        return len(self.frontier) + self.keys.waiting + self.domains.overflowed

    def enqueue_request(self, request: Request) -> bool:
        host = urlparse_cached(request).hostname or ""
        if self.opt_out.refuses(request.url, host, "frontier/opt_out_refused"):
            return False
        if not request.dont_filter and not self.domains.admissible(host):  # before the URL-seen filter: costs nothing
            self.stats.inc_value("traps/domain_max_hosts")
            return False
        # Handed out and sent back unfetched (its robots.txt came first, a retry, a render): it
        # waits again with the importance it had, still tracked, at its host's back queue.
        again = request.dont_filter and bool(request.meta.get(HANDED))
        dynamic = self.prioritizer.dynamic and (not request.dont_filter or again)
        # The fingerprint keys the importance state and the journal; breadth-first without a
        # JOBDIR needs neither (0 stands in: no ordering reads it).
        fp = fingerprint(url_key(request)) if dynamic or self.journal is not None else 0
        if not request.dont_filter and self.df.request_seen(request):
            self.stats.inc_value("dupefilter/filtered")  # what Scrapy's dupefilters log; BaseDupeFilter.log is deprecated
            self.stats.inc_value("frontier/links_known")  # the completion estimate's novelty
            if dynamic:  # one more link to a URL that may still wait: its importance grows
                self.prioritizer.admit(fp, request.url, host, request.meta, new=False)
                better = self.prioritizer.promote(fp, request.url, host, request.meta) if self._promoting else None
                if better is not None:  # a copy at the better level; the first copy up is fetched
                    self._queue(host, better, request_entry(request, self.spider))
                    self.stats.inc_value("ordering/promoted_on_link")
            return False
        if host in self._capped:
            self.stats.inc_value("traps/copy_host_dropped")
            return False
        # Retries and requeues are not new pages, nor are a page's requisites (REQUISITES_MAX_PER_HOST bounds them).
        page = not request.dont_filter and not request.meta.get("requisite")
        if page and not self.site_cap.admit(host):
            self.stats.inc_value("traps/max_pages_per_host")
            return False
        if page and not self.domains.admit(host):
            self.stats.inc_value("traps/max_pages_per_domain")
            return False
        revisit = request.meta.get("revisit", False)
        if again and dynamic:
            self.prioritizer.give_back(fp, host, request.meta)
        elif dynamic:
            self.prioritizer.admit(fp, request.url, host, request.meta, new=True)
        # Revisits rank by how overdue they are, in the upper levels (ahead of discovery).
        level = self.prioritizer.level(fp, request.url, host, request.meta, request.priority)
        if dynamic and self._promoting:
            self.prioritizer.queued(fp, level)
        if revisit:
            self.stats.inc_value(f"frontier/revisit_level/{level}")
        try:
            entry = request_entry(request, self.spider)
        except ValueError as exc:
            # Queues live on disk: a callback must be a spider method, as with Scrapy's JOBDIR.
            raise ValueError(f"the frontier cannot queue {request}: {exc}") from exc
        # Revisits are not journaled: the long-term revisit queue is their durable record.
        if self.journal is not None and not revisit:
            self.journal.append((fp, request.dont_filter, host, level, entry))
        self._queue(host, level, entry, again=request.dont_filter)
        retries = request.meta.get("retry_times", 0)
        if retries:  # never straight back: the host waits a jittered back-off first
            self.outcomes.hold(self.keys.key_of(host), self.hosts.retry_hold(retries, self.clock()))
        self.stats.inc_value("frontier/enqueued")
        return True

    def _queue(self, host: str, level: int, entry: dict, again: bool = False) -> None:
        """Queue an entry, unless its domain has its open hosts and it waits in the domain's
        overflow; ``again`` (a retry, a request sent back) opens its host regardless."""
        for item in self.domains.queue(host, (host, level, entry), force=again):
            self._admit(*item)

    def _left_frontier(self, host: str) -> None:
        """An entry of ``host`` was handed out and is done, or dropped: overflow entries may come in."""
        for item in self.domains.taken(host):
            self._admit(*item)

    def _fetch_finished(self, request: Request, result: Any) -> None:
        host = self._handed_hosts.pop(id(request), None)
        if host is not None:
            self._left_frontier(host)

    def _admit(self, host: str, level: int, entry: dict) -> None:
        """Push an entry under its politeness key, once the host's address is known when the
        key is the IP or the per-IP cap needs it."""
        ready, resolve = self.keys.admit(host, level, entry)
        self._push(ready)
        if resolve:
            from twisted.internet import reactor

            # The installed resolver (HOST_RESOLVE pins, Scrapy's DNS cache), off the reactor thread.
            # Unresolvable: keyed by the name; the fetch itself reports the DNS error.
            reactor.resolve(host).addCallbacks(self._resolved, lambda _: self._resolved(host, host),
                                               callbackArgs=(host,))

    def _resolved(self, address: str, host: str) -> None:
        self._push(self.keys.resolved(host, address))
        self.waker.now()

    def _push(self, ready: list[Ready]) -> None:
        for key, group, level, entry in ready:
            if group is not None:
                self.frontier.set_group(key, group)
            self.frontier.push(key, entry, level, again=bool(entry.get("dont_filter") and entry["meta"].get(HANDED)))

    def next_request(self) -> Request | None:
        holding = next((busy for busy in self._backlogged if busy()), None)
        if holding is not None:
            if self._held_since is None:  # counted, so a crawl slower than its politeness says why
                self._held_since = self.clock()
                self.stats.inc_value("frontier/backlog_holds")
                self.stats.inc_value(f"frontier/backlog_holds/{type(getattr(holding, '__self__', holding)).__name__}")
            return None  # fetched pages are piling up: they wait on the server (asked again as each leaves)
        now = self.clock()
        if self._held_since is not None:
            self.stats.inc_value("frontier/backlog_held_seconds", round(now - self._held_since, 3))
            self._held_since = None
        while True:
            popped = self.frontier.pop(now)
            if popped is None:
                self.waker.at(self.frontier.next_due())
                return None
            key, entry = popped
            url = entry["url"]
            host = urlsplit(url).hostname or ""
            ukey = key_of(entry["method"], url, entry["body"])
            tracked = self.prioritizer.dynamic and (not entry.get("dont_filter") or bool(entry["meta"].get(HANDED)))
            fp = fingerprint(ukey) if tracked else 0
            capped = host in self._capped
            if capped or self.opt_out.refuses(url, host, "frontier/opt_out_dropped"):
                if capped:
                    self.stats.inc_value("traps/copy_host_dropped")
                # Opted out, or its host capped, while it waited: dropped, and the key freed at
                # once (nothing was fetched).
                self.frontier.release(key, now)
                if tracked:
                    self.prioritizer.take(fp, host, {})
                self._forget(ukey)
                self._left_frontier(host)
                continue
            if tracked and self._promoting and not self.prioritizer.dequeued(fp):
                self.frontier.release(key, now)  # a promoted copy already went: nothing to fetch
                self.stats.inc_value("ordering/copies_skipped")
                self._left_frontier(host)
                continue
            break
        due = self.frontier.next_allowed.get(key)  # None: the key's first request
        if due is not None and now - due > LATE:
            # Handed out past its host's due time: the crawler's own lag (a busy reactor, pages
            # piling up), which a polite crawl's rate pays for.
            self.stats.inc_value("frontier/dispatched_late")
            self.stats.inc_value("frontier/dispatched_late_seconds", round(now - due, 4))
        request = request_from_dict(entry, spider=self.spider)
        request.meta[HANDED] = True
        if tracked:
            self.prioritizer.take(fp, host, request.meta)
        self.outcomes.handed(request, key)
        self._handed_hosts[id(request)] = host
        self.stats.inc_value("frontier/dequeued")
        return request

    def _forget(self, ukey: str) -> None:
        """A queued entry that will never be fetched counts as completed (a resume leaves it out)."""
        if self.journal is not None:
            self.journal.complete([fingerprint(ukey)])

    def _relevel(self, key: str, level: int, entry: dict) -> int:
        url = entry["url"]
        return self.prioritizer.relevel(fingerprint(key_of(entry["method"], url, entry["body"])), url,
                                        urlsplit(url).hostname or "", entry, level)

    # -- resume and completion ---------------------------------------------
    def _resume(self) -> None:
        """Queue the journal's pending records again (the URL-seen state and the per-site
        counts are rebuilt from every record) and compact the journal."""
        assert self.journal is not None
        started = time.monotonic()

        def seen(record: Record) -> None:
            if not record[1]:  # a new URL: it counts against its host's cap
                self.site_cap.admit(record[2])
            mark_seen(self.df, record[4], self.spider)

        def requeue(record: Record) -> None:
            fp, dont_filter, host, level, entry = record
            self._queue(host, level, entry, again=dont_filter)
            if not dont_filter and self._promoting:
                self.prioritizer.queued(fp, level)

        pending, recorded = self.journal.resume(seen, requeue, getattr(self.df, "checkpoint", None))
        self.stats.set_value("frontier/resumed", pending)
        if recorded:
            logger.info("resumed from %s: %d of %d journaled URLs still pending (%.1f s)",
                        self.journal.directory, pending, recorded, time.monotonic() - started)

    def _settled(self, request: Request) -> None:
        self._forget(url_key(request))

    def _pages_committed(self, urls: list[str]) -> None:
        if self.journal is not None:
            self.journal.complete(fingerprint(u) for u in urls)

    # -- answers to other components ---------------------------------------
    def rest_after(self, host: str, duration: float) -> float:
        """Seconds ``host`` rests after a fetch of ``duration`` seconds: the minimum interval,
        its Crawl-delay, the duration rule (answers :data:`crawlproj.signals.rest_after`)."""
        return self.hosts.rest_after(self.keys.key_of(host), duration)

    def url_seen_test(self) -> Any:
        """The dupefilter's cheap membership test, so the spider skips seen links before it builds
        requests (answers :data:`crawlproj.signals.url_seen_test`); None if the ordering counts
        repeated links, or the dupefilter has no such test."""
        return None if self.prioritizer.dynamic else getattr(self.df, "seen", None)

    def urls_seen_test(self) -> Any:
        """The dupefilter's test of many URLs in one go, where it has one (answers
        :data:`crawlproj.signals.urls_seen_test`); None as for :meth:`url_seen_test`."""
        return None if self.prioritizer.dynamic else getattr(self.df, "seen_many", None)

    def copy_host(self, host: str, verdict: str) -> None:
        """A host's pages are mostly copies (answers :data:`crawlproj.signals.copy_host`): rest it
        after one more copy, or fetch nothing more of it."""
        if verdict == "cap":
            self._capped.add(host)
            logger.warning("host %s capped: its pages are mostly copies of one another", host)
        elif self.copy_rest:
            self.outcomes.hold(self.keys.key_of(host), Hold(self.clock() + self.copy_rest, "copies",
                                                            "frontier/copy_host_rests"))

    def host_admission_test(self) -> Any:
        """The domain budget's test of a link's host (answers :data:`crawlproj.signals.host_admission_test`)."""
        return self.domains.admissible if self.domains.max_hosts else None

    def describe_hosts(self, hosts: list[str]) -> dict[str, dict]:
        """Each host's politeness state for the dashboard (answers :data:`crawlproj.signals.describe_hosts`)."""
        return host_rows(self.frontier, self.hosts, self.keys, hosts, self.clock())

    def _update_stats(self, final: bool = False) -> None:
        if self.prioritizer.dynamic:
            self.stats.set_value("ordering/tracked", self.prioritizer.tracked(exact=final))
            self.stats.set_value("ordering/promotions", self.prioritizer.promotions)
            self.ordering.save_if_due()
        now = self.clock()
        figures = frontier_figures(self.frontier, now, self.spill, self.domains.overflowed)
        figures.update(self._rule_counts.figures(self.hosts.rules.values()))
        figures.update(self._completion_figures(now))
        for name, value in figures.items():
            self.stats.set_value(name, value)
        self._say_far_wait(now)

    #: A crawl with nothing due for this long, and nothing in flight, says what it waits for.
    FAR_WAIT = 30.0

    def _say_far_wait(self, now: float) -> None:
        """When everything left waits on far rests (a retry back-off, a Retry-After, a parked
        host), say so on the console once a minute: the crawl is open for a reason."""
        due = self.frontier.next_due()
        if due is None or self.frontier.in_flight or not self.has_pending_requests() or due - now < self.FAR_WAIT:
            return
        if now - self._far_wait_said < 60.0:
            return
        self._far_wait_said = now
        rules = Counter(self.hosts.rules.get(str(key)) or "interval" for key in self.frontier.back)
        why = ", ".join(f"{n} {rule}" for rule, n in rules.most_common()) or "rests"
        logger.info("waiting: nothing due for %.0f s (until %s); %d URL(s) queued, their hosts resting (%s)",
                    due - now, time.strftime("%H:%M:%S", time.localtime(time.time() + due - now)), len(self), why)
        self.stats.set_value("frontier/far_wait_seconds", round(due - now, 1))

    def _completion_figures(self, now: float) -> dict:
        """The completion estimate (:mod:`.completion`) from every active key's queue and rest."""
        get = self.stats.get_value
        fetched = get("frontier/dequeued", 0)
        # Links to known URLs: those the spider dropped itself (the frontier's seen test) and those the filter did.
        self.completion.observe(now, fetched, get("frontier/enqueued", 0),
                                get("frontier/links_known", 0) + get("crawlproj/links_seen", 0))
        keys = []
        for key in list(self.frontier.back):
            state = self.frontier.key_state(key, now)
            interval = self.hosts.intervals.get(key)
            keys.append((str(key), state["queued"], interval.seconds if interval else self.hosts.rest_after(key, 0.0),
                         state["due_in"]))
        estimate = self.completion.estimate(keys, len(self.frontier), len(self.frontier.in_flight), fetched)
        return estimate.figures() if estimate is not None else {}
