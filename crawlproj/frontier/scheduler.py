"""The frontier as Scrapy's scheduler (the thin adapter over :mod:`.tiers`)."""

from __future__ import annotations

import logging
import os
import random
import tempfile
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
from scrapy import signals
from twisted.internet import task

from .. import signals as crawl_signals
from ..ordering.persistence import OrderingSnapshots
from ..ordering.prioritizer import build_prioritizer
from ..politeness import feedback
from ..politeness.hosts import HELD, FetchVerdict, Hold
from ..politeness.waseda import host_politeness
from ..politeness.keys import PolitenessKeys, Ready
from ..politeness.opt_out import OptOutSource
from .entry import request_entry
from .figures import RuleCounts, frontier_figures
from .journal import FrontierJournal, Record, fingerprint
from .protocol import Frontier
from .spill import SegmentStore, spill_factory
from .tiers import TwoTierFrontier
from .urlseen import key_of, url_key

logger = logging.getLogger(__name__)


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
        self.crawler = crawler
        self.stats = crawler.stats
        self.df = dupefilter
        self.hosts = host_politeness(crawler)  # each key's intervals and holds, shared with the Waseda middleware
        self.rules = self.hosts.rules  # key -> the rule that set its current rest
        self._verdicts: dict[int, FetchVerdict] = {}  # id(request) -> its key's rest (the Waseda middleware's)
        self._rule_counts = RuleCounts()
        self.retry_base = s.getfloat("RETRY_BACKOFF_BASE")
        self.retry_max = s.getfloat("RETRY_BACKOFF_MAX")
        self.max_pages_per_host = s.getint("MAX_PAGES_PER_HOST")
        self.per_ip = s.getint("PER_IP_CONCURRENCY")
        self._admitted: Counter[str] = Counter()  # host -> new URLs admitted (the per-site cap)
        self.rng = random.Random()
        levels = s.getint("FRONTIER_LEVELS")
        active = s.getint("FRONTIER_ACTIVE_KEYS") or 3 * s.getint("CONCURRENT_REQUESTS")
        jobdir = s.get("JOBDIR")
        self.journal = self._build_journal(jobdir)
        self.spill: SegmentStore | None = None
        self.prioritizer = build_prioritizer(s, levels)
        self.frontier: Frontier = self._build_frontier(s, levels, active)
        self.ordering = OrderingSnapshots(self.prioritizer, jobdir, s.getfloat("ORDERING_SAVE_SECONDS"))
        self.opt_out = OptOutSource(s.get("OPT_OUT_FILE"), *self._opt_out_redis(s))
        self.opt_out_every = s.getfloat("OPT_OUT_RELOAD_SECONDS")
        self._opt_out_read = float("-inf")
        self._opted_out_hosts: set[str] = set()
        self._promoting = False  # set in open(), once the frontier is known
        self.keys = PolitenessKeys(s.get("FRONTIER_KEY"), self.per_ip)  # host -> key, and address waits
        self.clock = time.monotonic
        self._handed: dict[int, tuple[str, Request]] = {}  # id(request) -> (key, request)
        self._reached: dict[int, float] = {}  # id(request) -> when it reached the downloader
        self._timer: Any = None
        self._timer_at = float("inf")
        self._stats_loop: task.LoopingCall | None = None
        self.spider: Spider | None = None

    def _build_journal(self, jobdir: str | None) -> FrontierJournal | None:
        """The resume log in ``JOBDIR/frontier`` (none without a JOBDIR)."""
        return FrontierJournal(os.path.join(jobdir, "frontier")) if jobdir else None

    def _build_frontier(self, s: Any, levels: int, active: int) -> Frontier:
        """The local two-tier frontier, its queues' middles spilled to disk."""
        jobdir = s.get("JOBDIR")
        front_buffer, back_buffer = s.getint("FRONTIER_FRONT_BUFFER"), s.getint("FRONTIER_BACK_BUFFER")
        extra: dict[str, Any] = {}
        if front_buffer and back_buffer:
            spill_dir = s.get("FRONTIER_SPILL_DIR") or (
                os.path.join(jobdir, "frontier", "spill") if jobdir else tempfile.mkdtemp(prefix="crawlproj-spill-"))
            self.spill = SegmentStore(spill_dir, segment_bytes=s.getint("FRONTIER_SEGMENT_BYTES"))
            extra["queue_factory"] = spill_factory(self.spill, front_buffer, back_buffer)
        if self.prioritizer.dynamic:  # an entry's level may improve while it waits
            extra["relevel"] = self._relevel
        if self.prioritizer.focused and s.getbool("TOPICAL_FOCUS"):  # off-topic links sink to the last level
            extra.update(hold_level=self.prioritizer.levels - 1, hold_wait=s.getfloat("TOPICAL_FOCUS_WAIT"))
        frontier = TwoTierFrontier(levels=levels, active_target=active, max_active=s.getint("FRONTIER_MAX_ACTIVE_KEYS"),
                                   bias=s.getfloat("FRONTIER_BIAS"), group_cap=self.per_ip, **extra)
        return frontier

    def _opt_out_redis(self, s: Any) -> tuple[Any, str]:
        """The Redis set of the opt-out list (distributed mode), or none."""
        return None, ""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierScheduler:
        dupefilter = build_from_crawler(load_object(crawler.settings["DUPEFILTER_CLASS"]), crawler)
        return cls(crawler, dupefilter)

    # -- Scrapy's scheduler interface ------------------------------------
    def open(self, spider: Spider) -> None:
        self.spider = spider
        sig = self.crawler.signals
        sig.connect(self._fetch_finished, signal=crawl_signals.fetch_finished)
        sig.connect(self._reached_downloader, signal=signals.request_reached_downloader)
        sig.connect(self._robots_fetched, signal=crawl_signals.robots_fetched)
        sig.connect(self._pages_committed, signal=crawl_signals.pages_committed)
        sig.connect(self._fetch_observed, signal=crawl_signals.fetch_observed)
        sig.connect(self._host_rest, signal=crawl_signals.host_rest)
        sig.connect(self.rest_after, signal=crawl_signals.rest_after)
        sig.connect(self.describe_hosts, signal=crawl_signals.describe_hosts)
        sig.connect(self.url_seen_test, signal=crawl_signals.url_seen_test)
        self.df.open()
        self._reload_opt_out()
        restored = self.ordering.restore()
        if restored is not None:
            self.stats.set_value("ordering/restored", restored)
        # Re-prioritising waiting URLs needs a frontier that asks (Redis keeps a URL's level as pushed).
        self._promoting = self.prioritizer.dynamic and self.frontier.reprioritises
        if self.journal is not None:
            self._resume()
        self._stats_loop = task.LoopingCall(self._update_stats)
        self._stats_loop.start(1.0, now=False)

    def close(self, reason: str) -> None:
        if self._stats_loop is not None and self._stats_loop.running:
            self._stats_loop.stop()
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._update_stats()
        self.ordering.save()
        self.df.close(reason)
        if self.journal is not None:
            self.journal.close()
        if self.spill is not None:
            self.spill.close()

    def has_pending_requests(self) -> bool:
        return self.frontier.has_pending() or bool(self.keys.waiting)

    def __len__(self) -> int:
        return len(self.frontier) + self.keys.waiting

    def enqueue_request(self, request: Request) -> bool:
        host = urlparse_cached(request).hostname or ""
        rule = self.opt_out.current.rule_for(request.url, host)
        if rule is not None:
            self._opted_out(host, rule, "frontier/opt_out_refused")
            return False
        dynamic = self.prioritizer.dynamic and not request.dont_filter
        # The fingerprint keys the importance state and the journal; breadth-first without a
        # JOBDIR needs neither (0 stands in: no ordering reads it).
        fp = fingerprint(url_key(request)) if dynamic or self.journal is not None else 0
        if not request.dont_filter and self.df.request_seen(request):
            self.df.log(request, self.spider)
            if dynamic:  # one more link to a URL that may still wait: its importance grows
                self.prioritizer.admit(fp, request.url, host, request.meta, new=False)
                better = self.prioritizer.promote(fp, request.url, host, request.meta) if self._promoting else None
                if better is not None:  # a copy at the better level; the first copy up is fetched
                    self._admit(host, better, request_entry(request, self.spider))
                    self.stats.inc_value("ordering/promoted_on_link")
            return False
        if not request.dont_filter:  # retries and requeues are not new pages
            if self.max_pages_per_host and self._admitted[host] >= self.max_pages_per_host:
                self.stats.inc_value("traps/max_pages_per_host")
                return False
            self._admitted[host] += 1
        revisit = request.meta.get("revisit", False)
        if dynamic:
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
        self._admit(host, level, entry)
        retry = request.meta.get("retry_times", 0)
        if retry:
            # Never straight back: the host waits an exponential, jittered back-off first.
            wait = min(self.retry_max, self.retry_base * 2 ** (retry - 1)) * self.rng.uniform(0.5, 1.5)
            self.frontier.defer(self.keys.key_of(host), self.clock() + wait)
            self.stats.inc_value("frontier/retries_deferred")
        self.stats.inc_value("frontier/enqueued")
        return True

    def _admit(self, host: str, level: int, entry: dict) -> None:
        """Push an entry under its politeness key, once the host's address is known when the
        key is the IP or the per-IP cap needs it."""
        ready, resolve = self.keys.admit(host, level, entry)
        self._push(ready)
        if resolve:
            from twisted.internet import reactor

            # The installed resolver (HOST_RESOLVE pins, Scrapy's DNS cache), off the reactor thread.
            reactor.resolve(host).addCallbacks(self._resolved, self._unresolvable,
                                               callbackArgs=(host,), errbackArgs=(host,))

    def _unresolvable(self, failure: Any, host: str) -> None:
        self._resolved(host, host)  # key by the name; the fetch itself reports the DNS error

    def _resolved(self, address: str, host: str) -> None:
        self._push(self.keys.resolved(host, address))
        self._wake()

    def _push(self, ready: list[Ready]) -> None:
        for key, group, level, entry in ready:
            if group is not None:
                self.frontier.set_group(key, group)
            self.frontier.push(key, entry, level)

    def next_request(self) -> Request | None:
        now = self.clock()
        while True:
            popped = self.frontier.pop(now)
            if popped is None:
                self._wake_at(self.frontier.next_due())
                return None
            key, entry = popped
            url = entry["url"]
            host = urlsplit(url).hostname or ""
            ukey = key_of(entry["method"], url, entry["body"])
            tracked = self.prioritizer.dynamic and not entry.get("dont_filter")
            fp = fingerprint(ukey) if tracked else 0
            rule = self.opt_out.current.rule_for(url, host)
            if rule is not None:
                # Opted out while it waited: dropped, and the key freed at once (nothing was fetched).
                self.frontier.release(key, now)
                if tracked:
                    self.prioritizer.take(fp, host, {})
                self._opted_out(host, rule, "frontier/opt_out_dropped")
                self._forget(ukey)
                continue
            if tracked and self._promoting and not self.prioritizer.dequeued(fp):
                self.frontier.release(key, now)  # a promoted copy already went: nothing to fetch
                self.stats.inc_value("ordering/copies_skipped")
                continue
            break
        request = request_from_dict(entry, spider=self.spider)
        if tracked:
            self.prioritizer.take(fp, host, request.meta)
        request.meta["politeness_key"] = key  # the Waseda middleware records the fetch under it
        self._handed[id(request)] = (key, request)
        self.stats.inc_value("frontier/dequeued")
        return request

    def _forget(self, ukey: str) -> None:
        """A queued entry that will never be fetched counts as completed (a resume leaves it out)."""
        if self.journal is not None:
            self.journal.complete([fingerprint(ukey)])

    # -- ordering and the opt-out list -------------------------------------
    def _relevel(self, key: str, level: int, entry: dict) -> int:
        url = entry["url"]
        return self.prioritizer.relevel(fingerprint(key_of(entry["method"], url, entry["body"])), url,
                                        urlsplit(url).hostname or "", entry, level)

    def _reload_opt_out(self) -> None:
        self._opt_out_read = time.monotonic()
        try:
            fresh = self.opt_out.reload()
        except Exception as exc:  # noqa: BLE001 - an unreadable list keeps the last good one
            logger.error("opt-out list unreadable, keeping the last one: %s", exc)
            return
        if fresh is not None:
            self._opted_out_hosts.clear()
            self.stats.set_value("frontier/opt_out_entries", len(fresh))
            logger.info("opt-out list: %d entries", len(fresh))

    def _opted_out(self, host: str, rule: str, stat: str) -> None:
        self.stats.inc_value(stat)
        if host not in self._opted_out_hosts:
            self._opted_out_hosts.add(host)
            logger.warning("opt-out: %s is excluded (entry %r); its queued URLs are dropped", host, rule)

    # -- resume --------------------------------------------------------------
    def _resume(self) -> None:
        """Queue the journal's pending records again and compact the journal."""
        assert self.journal is not None
        started, seen = time.monotonic(), [0]
        mark = getattr(self.df, "mark_seen_key", None)

        def seen_record(record: Record) -> None:
            seen[0] += 1
            entry = record[4]
            if not record[1]:
                self._admitted[record[2]] += 1
            if mark is not None:
                mark(key_of(entry["method"], entry["url"], entry["body"]))
            else:
                self.df.request_seen(request_from_dict(entry, spider=self.spider))

        def requeue() -> Any:
            for record in self.journal.replay(seen=seen_record):
                fp, dont_filter, host, level, entry = record
                self._admit(host, level, entry)
                if not dont_filter and self._promoting:
                    self.prioritizer.queued(fp, level)
                yield record

        checkpoint = getattr(self.df, "checkpoint", None)
        if checkpoint is not None:
            pending = self.journal.compact(requeue(), checkpoint)
        else:  # a dupefilter that cannot save itself: keep the whole log
            pending = sum(1 for _ in requeue())
        self.journal.open()
        self.stats.set_value("frontier/resumed", pending)
        if seen[0]:
            logger.info("resumed from %s: %d of %d journaled URLs still pending (%.1f s)",
                        self.journal.directory, pending, seen[0], time.monotonic() - started)

    def _pages_committed(self, urls: list[str]) -> None:
        if self.journal is not None:
            self.journal.complete(fingerprint(u) for u in urls)

    # -- completion and wake-up ------------------------------------------
    def _reached_downloader(self, request: Request, spider: Spider | None = None) -> None:
        if id(request) in self._handed:
            self._reached[id(request)] = self.clock()

    def _fetch_finished(self, request: Request, result: Any) -> None:
        handed = self._handed.pop(id(request), None)
        if handed is None:
            return  # not ours (robots.txt fetched from inside a middleware)
        key = handed[0]
        now = self.clock()
        reached = self._reached.pop(id(request), None)
        verdict = self._verdicts.pop(id(request), None)
        if reached is None:
            # Never reached the network (robots.txt said no, or the robots.txt fetch
            # took this visit and sent the request back): only that fetch needs rest.
            self.frontier.release(key, self.hosts.unfetched(key, self.frontier.next_allowed.get(key, now)))
        else:
            if verdict is None:  # no WasedaIntervalMiddleware: the whole time since it reached the downloader
                verdict = self.hosts.fetched(key, result, now - reached, now, now, time.time())
            self.stats.inc_value(f"frontier/interval_rule/{verdict.interval.rule}")
            if verdict.backoff:
                self.stats.inc_value("frontier/backoffs")
            self.frontier.release(key, verdict.release_at)
            if verdict.failure is not None:
                self.stats.inc_value(f"frontier/fetch_failures/{verdict.failure}")
                self.crawler.signals.send_catch_log(crawl_signals.host_error,
                                                    host=urlparse_cached(request).hostname or "", kind=verdict.failure)
            for hold in verdict.holds:
                self._hold(key, hold)
        self._wake_at(self.frontier.next_due())

    def _host_rest(self, request: Request, verdict: FetchVerdict) -> None:
        if id(request) in self._handed:
            self._verdicts[id(request)] = verdict

    def _fetch_observed(self, request: Request, result: Any) -> None:
        """robots.txt, fetched from inside a middleware: its closed connection counts too."""
        if feedback.closed_keepalive(result):
            key = self.keys.key_of(urlparse_cached(request).hostname or "")
            hold = self.hosts.keepalive_closed(key, self.clock())
            if hold is not None:
                self._hold(key, hold)

    def _hold(self, key: str, hold: Hold) -> None:
        """Keep ``key`` back beyond its interval, and count why."""
        self.frontier.defer(key, hold.until)
        self.stats.inc_value(hold.stat)
        if hold.rule == "parked":
            logger.warning("host %s parked for %.0f s after %d failures in a row", key, hold.until - self.clock(),
                           self.hosts.park_after)

    def _robots_fetched(self, host: str, status: int | None, crawl_delay: float | None = None,
                        duration: float | None = None) -> None:
        self.hosts.robots_fetched(self.keys.key_of(host or ""), crawl_delay, duration, self.clock())

    def rest_after(self, host: str, duration: float) -> float:
        """Seconds ``host`` rests after a fetch of ``duration`` seconds: the minimum interval,
        its Crawl-delay, the duration rule (answers :data:`crawlproj.signals.rest_after`)."""
        return self.hosts.rest_after(self.keys.key_of(host), duration)

    def url_seen_test(self) -> Any:
        """The dupefilter's cheap membership test, for the spider to skip seen links before it
        builds their requests (answers :data:`crawlproj.signals.url_seen_test`). None when the
        ordering must see every link (it counts repeated ones) or the dupefilter has no such test."""
        return None if self.prioritizer.dynamic else getattr(self.df, "seen", None)

    def describe_hosts(self, hosts: list[str]) -> dict[str, dict]:
        """Each host's politeness state for the dashboard (answers :data:`crawlproj.signals.describe_hosts`):
        the interval in force, the rule that set it and every rule's part, whether it is held
        back (suspended, parked, keep-alive pause) and for how long, its queue, its Crawl-delay."""
        now, out = self.clock(), {}
        for host in hosts:
            key = self.keys.key_of(host)
            state = self.frontier.key_state(key, now)
            row = {"key": key, **self.hosts.describe(key), **state}
            row["held"] = row["rule"] if row["rule"] in HELD and state.get("due_in", 0) > 0 else None
            out[host] = row
        return out

    def _wake_at(self, due: float | None) -> None:
        if due is None:
            return
        if self._timer is not None and self._timer.active() and self._timer_at <= due:
            return
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        from twisted.internet import reactor

        self._timer_at = due
        # At the due time: a wake a hair early finds nothing due and sets the timer again
        # (a millisecond's margin here was a millisecond lost on every fetch).
        self._timer = reactor.callLater(max(0.0, due - self.clock()), self._wake)

    def _wake(self) -> None:
        engine = self.crawler.engine
        slot = getattr(engine, "_slot", None) if engine is not None else None
        if slot is not None:
            slot.nextcall.schedule()

    def _update_stats(self) -> None:
        if time.monotonic() - self._opt_out_read >= self.opt_out_every:
            self._reload_opt_out()
        if self.prioritizer.dynamic:
            self.stats.set_value("ordering/tracked", self.prioritizer.tracked())
            self.stats.set_value("ordering/promotions", self.prioritizer.promotions)
            self.ordering.save_if_due()
        figures = frontier_figures(self.frontier, self.clock(), self.spill)
        figures.update(self._rule_counts.figures(self.rules.values()))
        for name, value in figures.items():
            self.stats.set_value(name, value)
