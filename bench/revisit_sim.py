"""Revisit policies in a discrete-event simulation: freshness, age and detection at equal budget.

Three regimes (:class:`World`), 100,000 pages each: ``loguniform`` (lambda log-uniform between
1/hour and 1/year, yes/no visits only), ``realweb`` (Cho & Garcia-Molina's measured change
intervals, correlated sites and directories, honest, lying or missing Last-Modified, sitemaps
with lastmod) and ``feeds`` (``realweb``'s pages, and RSS/Atom feeds on 40% of sites, a fifth
of them lying; ``crawlproj_feeds`` reads them, each reading a fetch of the budget). Every policy gets the same fetch budget per day (``--budget``) for 365
simulated days, in hourly steps; a policy that asks for more than the budget gets its most
overdue pages first. Changes are simulated as events (each page's next change, and its first
change since the last fetch), so a policy that is told when pages changed is scored on what
really happened. The ``tamura`` and ``crawlproj`` policies run the project's own code
(:mod:`crawlproj.revisit.estimator` and :mod:`crawlproj.revisit.schedule`) on every page at once.

Policies:

* ``uniform``: every page every N / budget days;
* ``heritrix``: Heritrix 1 WaitEvaluator (changed: /1.5, unchanged: x1.5, 1 h to 4 weeks);
* ``nutch``: Nutch AdaptiveFetchSchedule (changed: x(1 - 0.2), unchanged: x(1 + 0.4), 60 s to 365 d);
* ``stormcrawler``: StormCrawler AdaptiveScheduler (changed: 0.5 I + 0.5 I_min; unchanged:
  min(1.5 I, I_max); 1 h to 14 d);
* ``tamura``: eq. (3)'s estimate per page from yes/no visits, allocated by the project's
  :func:`~crawlproj.revisit.schedule.optimal_intervals` (the freshness-optimal allocation,
  with estimated rates) under the budget;
* ``tamura_proportional``: eq. (3)'s estimate as the interval (factor 1), the paper's rule;
* ``crawlproj``: the crawler's schedule with all its evidence: believed dates (Last-Modified,
  the first fetch's too, and sitemaps read daily), priors per directory and site and for the
  population (empirical Bayes), yes/no visits otherwise; the same allocation, with up to two
  probes of a page before it is left alone on yes/no visits;
* ``oracle``: the true lambdas, allocated optimally (Cho & Garcia-Molina).

Reports per regime mean freshness (the share of time a page's copy is up to date), mean age
(hours a copy has been out of date), the change-detection ratio (fetches that found a new
version / fetches), the share of the oracle's gain over uniform each estimating policy
captures, and the median relative error of lambda after 5, 10 and 20 visits: eq. (3) and the
exact MLE from yes/no visits, and the crawler's estimate for pages with honest dates (also by
the dated changes seen, which bound what any estimator can do).
Plots like the paper's Figs. 3-5 (from the first regime's ``crawlproj`` run) go to
``--plots`` (a directory). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.harness import with_peak_rss  # noqa: E402

from crawlproj.progress import progress_bar  # noqa: E402
from crawlproj.revisit.estimator import (GroupPrior, RateGrid, dated_observation,  # noqa: E402
                                         mean_change_interval, mle_rate, smoothed_rate)
from crawlproj.revisit.schedule import (DAY, RevisitPolicy, budget_intervals, optimal_intervals,  # noqa: E402
                                       probe_intervals)

HOUR = 3600.0
YEAR = 365 * DAY


def fresh_integral(rate, span):
    """Expected time a copy synced at 0 stays fresh during [0, span]."""
    return -np.expm1(-rate * span) / rate


def age_integral(rate, span):
    """Expected integral of age over [0, span] after a sync at 0."""
    return span * span / 2 - span / rate + fresh_integral(rate, span) / rate


class World:
    """The pages of one regime: true rates, sites and directories, what each server says.

    ``lm``: 0 an honest Last-Modified, 1 the fetch time, 2 none. ``sitemap``: the page's site
    lists it in a sitemap with lastmod, read once a simulated day.
    """

    def __init__(self, rates, site, directory, lm, sitemap, feed=None) -> None:
        self.rates, self.site, self.directory, self.lm, self.sitemap = rates, site, directory, lm, sitemap
        self.n = len(rates)
        self.feed = np.zeros(self.n, dtype=np.int8) if feed is None else feed  # 0 none, 1 honest, 2 lying

    @classmethod
    def loguniform(cls, n: int, rng) -> World:
        """Today's regime: lambda log-uniform from 1/hour to 1/year, yes/no visits only."""
        rates = np.exp(rng.uniform(math.log(1 / YEAR), math.log(1 / HOUR), n))
        site = rng.integers(0, max(1, n // 200), n)  # sites and directories say nothing of rates here
        return cls(rates, site, site * 8 + rng.integers(0, 8, n), np.full(n, 2), np.zeros(n, dtype=bool))

    @classmethod
    def realweb(cls, n: int, rng) -> World:
        """Cho & Garcia-Molina's measured change intervals (23% within a day, 15% within a week,
        16% within a month, 16% within four months, 30% rarer), pages in directories and sites
        whose rates are correlated; 60% of sites send an honest Last-Modified, 15% the fetch
        time, 25% none; 30% list their pages in sitemaps with lastmod."""
        edges = [HOUR, DAY, 7 * DAY, 30 * DAY, 120 * DAY, 4 * YEAR]
        shares = [0.23, 0.15, 0.16, 0.16, 0.30]
        bucket = rng.choice(len(shares), n, p=shares)
        lo, hi = np.log(np.array(edges[:-1]))[bucket], np.log(np.array(edges[1:]))[bucket]
        rates = 1.0 / np.exp(rng.uniform(lo, hi))
        # Correlated neighbours: pages sorted by a noisy copy of their log rate fill directories
        # in turn, and directories fill sites, so neighbours change alike (not identically).
        order = np.argsort(np.log(rates) + rng.normal(0, 1.0, n))
        sizes = np.minimum(rng.zipf(1.8, n), 200)
        directory = np.empty(n, dtype=np.int64)
        directory[order] = np.repeat(np.arange(n), sizes[:n])[:n]
        dirs = int(directory.max()) + 1
        site_of_dir = np.repeat(np.arange(dirs), np.minimum(rng.zipf(2.0, dirs), 30))[:dirs]
        # Sites are shuffled so a site's directories are near in rate but not the same.
        site = site_of_dir[np.minimum(directory + rng.integers(-2, 3, n), dirs - 1).clip(0)]
        sites = int(site.max()) + 1
        lm = rng.choice(3, sites, p=[0.60, 0.15, 0.25])[site]
        sitemap = (rng.random(sites) < 0.30)[site]
        return cls(rates, site, directory, lm, sitemap)

    @classmethod
    def feeds(cls, n: int, rng) -> World:
        """``realweb``'s very pages (the same draws), and 40% of sites with an RSS or Atom feed
        listing their FEED_ENTRIES latest changed pages with dates; a fifth of those feeds date
        every entry at the moment they are served (the crawler drops such dates)."""
        world = cls.realweb(n, rng)
        sites = int(world.site.max()) + 1
        has, lying = rng.random(sites) < 0.40, rng.random(sites) < 0.20
        world.feed = np.where(has, np.where(lying, 2, 1), 0).astype(np.int8)[world.site]
        return world


FEED_ENTRIES = 20  # entries a feed lists: its site's latest changes
FEED_INTERVALS = (HOUR, DAY)  # a feed's own revisit interval, from its observed changes
FEED_NEW_PER_READ = 5.0  # a feed is read when about this many new entries are expected
FEED_SHARE = 0.03  # feed readings take at most this share of the fetch budget


class Simulation:
    """One policy over the whole horizon. Subclasses decide intervals after each visit.

    Changes are simulated as events, so that a policy that is told when pages changed
    (Last-Modified, sitemaps) is scored on what really happened: each page keeps the time of
    its next change after the last observation, and of its first change after the last fetch.
    """

    name = ""
    reads_sitemaps = False
    reads_feeds = False

    def __init__(self, world: World, budget_per_day: float, days: int, seed: int) -> None:
        self.world = world
        self.rates = world.rates
        self.n = world.n
        self.budget_per_step = budget_per_day / 24
        self.days = days
        self.rng = np.random.default_rng(seed)
        self.last = np.zeros(self.n)  # every page was fetched at time 0
        self.visits = np.ones(self.n, dtype=np.int64)
        self.next_change = self.rng.exponential(1 / self.rates)
        self.first_change = self.next_change.copy()  # the first change after the last fetch
        self.true_last = -self.rng.exponential(1 / self.rates)  # the last change before the last observation
        self.fresh = 0.0
        self.age = 0.0
        self.fetches = 0
        self.detected = 0
        self.base_interval = self.n / budget_per_day * DAY
        self.tick = None  # called with 1 each simulated hour (the progress bar)
        self.due = np.zeros(self.n)
        self.feed_fetches = 0

    def first_due(self) -> np.ndarray:
        return self.rng.uniform(0, self.base_interval, self.n)  # the first crawl spread its visits

    def observe(self, idx: np.ndarray, at: float) -> np.ndarray:
        """The pages' last change before ``at`` (moving their next change past ``at``)."""
        rate, upcoming = self.rates[idx], self.next_change[idx]
        moved = upcoming <= at
        if moved.any():
            r = rate[moved]
            # The changes after the first are Poisson: the last before `at` is a backward draw.
            back = np.minimum(self.rng.exponential(1 / r), at - upcoming[moved])
            self.true_last[idx[moved]] = at - back
            self.next_change[idx[moved]] = at + self.rng.exponential(1 / r)
        return self.true_last[idx]

    def last_modified(self, idx: np.ndarray, now: float, true_last: np.ndarray) -> np.ndarray:
        kind = self.world.lm[idx]
        return np.where(kind == 0, true_last, np.where(kind == 1, now, np.nan))

    def after_visit(self, idx, now, span, changed, last_modified) -> np.ndarray:
        raise NotImplementedError

    def sitemap_read(self, idx: np.ndarray, now: float, lastmod: np.ndarray) -> None:
        """Policies that read sitemaps learn each listed page's lastmod once a day."""

    def _feeds(self) -> dict | None:
        """Each feed's site -> its pages, its kind, when it is read next and at what interval."""
        if not self.reads_feeds or not self.world.feed.any():
            return None
        pages = np.flatnonzero(self.world.feed)
        sites = self.world.site[pages]
        order = np.argsort(sites, kind="stable")
        split = np.flatnonzero(np.diff(sites[order])) + 1
        groups = np.split(pages[order], split)
        n = len(groups)
        return {"pages": groups, "kind": [int(self.world.feed[g[0]]) for g in groups],
                "due": self.rng.uniform(0, DAY, n), "read": np.zeros(n), "new": np.zeros(n), "span": np.zeros(n),
                "credit": 0.0}

    def _read_feeds(self, feeds: dict, now: float, credit: float) -> float:
        """Due feeds are read first, each a fetch of the budget (at most FEED_SHARE of it): an
        honest feed's entries changed since its last reading are change evidence (as a
        sitemap's lastmod); a lying feed's dates are dropped, so it tells nothing. Each feed is
        read at its own observed rate of new entries, about FEED_NEW_PER_READ a reading."""
        feeds["credit"] = min(feeds["credit"] + FEED_SHARE * self.budget_per_step, 24 * self.budget_per_step)
        due = np.flatnonzero(feeds["due"] <= now)
        for f in due[np.argsort(feeds["due"][due])]:
            if credit < 1 or feeds["credit"] < 1:
                break
            credit -= 1
            feeds["credit"] -= 1
            self.feed_fetches += 1
            pages = feeds["pages"][f]
            last = self.observe(pages, now)
            new = np.flatnonzero(last > feeds["read"][f]) if feeds["read"][f] else np.array([], dtype=np.int64)
            if len(new) > FEED_ENTRIES:
                new = new[np.argpartition(-last[new], FEED_ENTRIES - 1)[:FEED_ENTRIES]]
            honest = feeds["kind"][f] == 1
            if honest and len(new):
                self.sitemap_read(pages[new], now, last[new])
            if feeds["read"][f]:
                feeds["new"][f] += len(new) if honest else 0
                feeds["span"][f] += now - feeds["read"][f]
            rate = (feeds["new"][f] + 0.5) / (feeds["span"][f] + DAY)  # new entries a second, smoothed
            feeds["read"][f], feeds["due"][f] = now, now + np.clip(FEED_NEW_PER_READ / rate, *FEED_INTERVALS)
        return credit

    def _account(self, idx, until):
        """Freshness and age of the copies fetched at ``last`` over [last, until]."""
        first = self.first_change[idx]
        start = self.last[idx]
        self.fresh += float((np.minimum(first, until) - start).sum())
        stale = np.maximum(0.0, until - first)
        self.age += float((stale * stale / 2).sum())

    def run(self) -> dict:
        due = self.due = self.first_due()
        credit = 0.0
        listed = np.flatnonzero(self.world.sitemap) if self.reads_sitemaps else np.array([], dtype=np.int64)
        feeds = self._feeds()
        for step in range(1, self.days * 24 + 1):
            if self.tick is not None:
                self.tick(1)
            now = step * HOUR
            if len(listed) and step % 24 == 0:
                self.sitemap_read(listed, now, self.observe(listed, now))
            credit += self.budget_per_step
            if feeds is not None:  # a host with a feed is checked through its feed first
                credit = self._read_feeds(feeds, now, credit)
            ready = np.flatnonzero(due <= now)
            take = int(credit)
            if take <= 0 or len(ready) == 0:
                credit = min(credit, self.budget_per_step)  # unused budget does not pile up
                continue
            if len(ready) > take:
                ready = ready[np.argpartition(due[ready], take - 1)[:take]]  # most overdue first
            credit -= len(ready)
            span = now - self.last[ready]
            changed = self.first_change[ready] <= now
            self._account(ready, now)
            self.fetches += len(ready)
            self.detected += int(changed.sum())
            self.visits[ready] += 1
            true_last = self.observe(ready, now)
            self.first_change[ready] = self.next_change[ready]
            interval = self.after_visit(ready, now, span, changed, self.last_modified(ready, now, true_last))
            self.last[ready] = now
            due[ready] = now + interval
        end = self.days * DAY
        self._account(np.arange(self.n), end)
        return {
            "freshness": self.fresh / (self.n * end),
            "age_hours": self.age / (self.n * end) / HOUR,
            "detection_ratio": self.detected / max(1, self.fetches),
            "fetches_per_day": self.fetches / self.days,
            "feed_fetches_per_day": self.feed_fetches / self.days,
        }


class Uniform(Simulation):
    name = "uniform"

    def after_visit(self, idx, now, span, changed, last_modified):
        return np.full(len(idx), self.base_interval)


class Multiplicative(Simulation):
    """Heritrix, Nutch and StormCrawler: the interval moves by a rule on changed / unchanged."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.interval = np.full(self.n, min(max(self.base_interval, self.lo), self.hi))

    def after_visit(self, idx, now, span, changed, last_modified):
        current = self.interval[idx]
        new = np.where(changed, self.on_change(current), self.on_same(current))
        self.interval[idx] = np.clip(new, self.lo, self.hi)
        return self.interval[idx]


class Heritrix(Multiplicative):
    name, lo, hi = "heritrix", HOUR, 28 * DAY

    def on_change(self, i):
        return i / 1.5

    def on_same(self, i):
        return i * 1.5


class Nutch(Multiplicative):
    name, lo, hi = "nutch", 60.0, 365 * DAY

    def on_change(self, i):
        return i * (1 - 0.2)

    def on_same(self, i):
        return i * (1 + 0.4)


class StormCrawler(Multiplicative):
    name, lo, hi = "stormcrawler", HOUR, 14 * DAY

    def on_change(self, i):
        return 0.5 * i + 0.5 * self.lo

    def on_same(self, i):
        return np.minimum(1.5 * i, self.hi)


class Tamura(Simulation):
    """The project's estimator and schedule, on all pages at once."""

    name = "tamura"
    allocate = True
    report_errors = True  # the estimator's errors are reported from this run only

    def __init__(self, *args, sample: int = 3000, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.policy = RevisitPolicy()
        self.py_rng = random.Random(1)
        self.U = np.zeros(self.n)
        self.m = np.zeros(self.n)
        self.tc_min = np.full(self.n, np.inf)
        self.interval = np.full(self.n, np.nan)
        self.rate = np.full(self.n, np.nan)  # the current estimate of every revisited page
        self.sampled = set(self.rng.choice(self.n, min(sample, self.n), replace=False).tolist())
        self.history: dict[int, tuple[list[float], list[float]]] = {i: ([], []) for i in self.sampled}
        self.errors: dict[int, list[tuple[float, float | None, float | None]]] = {5: [], 10: [], 20: []}
        self.mu: float | None = None
        self.day = -1
        self.target = self.budget_per_step * 24  # fetches a day asked of the allocation
        self.fetches_at_day_start = 0

    def after_visit(self, idx, now, span, changed, last_modified):
        self.U[idx] += np.where(changed, 0.0, span)
        self.m[idx] += changed
        self.tc_min[idx] = np.where(changed, np.minimum(self.tc_min[idx], span), self.tc_min[idx])
        T = np.full(len(idx), now)  # every page's first access was at 0
        estimate = mean_change_interval(T, self.U[idx], self.m[idx], self.tc_min[idx])
        if self.report_errors:
            self._record_errors(idx, span, changed, estimate)
        if self.allocate:
            self.rate[idx] = smoothed_rate(T, self.U[idx], self.m[idx], self.tc_min[idx])
            return self._allocate(idx, now)
        # The paper's rule: eq. (3) times the factor, back-off and shrink where singular.
        last = self.interval[idx]
        new = np.array([
            self.policy.clamp(self.policy.factor * e, self.py_rng) if not math.isnan(e) else
            self.policy.singular(now, float(self.U[i]), int(self.m[i]),
                                 None if math.isnan(li) else float(li), self.py_rng)[0]
            for e, i, li in zip(estimate.tolist(), idx.tolist(), last.tolist())])
        self.interval[idx] = new
        return new

    def _allocate(self, idx, now):
        """The budget's intervals for the pages' current rates."""
        day = int(now // DAY)
        if day != self.day:  # once a simulated day the budget is divided over the estimates again
            self.day = day
            # The fetches the schedule asks for drift from the budget (clamping, pages not yet
            # estimated, the 400-day redraw): steer the target by yesterday's use.
            used = self.fetches - self.fetches_at_day_start
            self.fetches_at_day_start = self.fetches
            budget = self.budget_per_step * 24
            if day > 1 and used > 0:
                self.target = float(np.clip(self.target * budget / used, 0.5 * budget, 2 * budget))
            known = ~np.isnan(self.rate)
            _, self.mu = optimal_intervals(self.rate[known], self.target / DAY, self.policy, mu_hint=self.mu)
        new = budget_intervals(self.rate[idx], self.mu, self.policy, self.rng)
        self.interval[idx] = new
        return new

    def _record_errors(self, idx, span, changed, estimate):
        for j, i in enumerate(idx.tolist()):
            if i not in self.sampled:
                continue
            changed_spans, same_spans = self.history[i]
            (changed_spans if changed[j] else same_spans).append(float(span[j]))
            k = len(changed_spans) + len(same_spans)
            if k in self.errors:
                mle = mle_rate(changed_spans, same_spans)
                eq3 = None if math.isnan(estimate[j]) else 1.0 / estimate[j]
                self.errors[k].append((float(self.rates[i]), eq3, mle))

    def error_report(self) -> dict:
        out = {}
        for k, rows in self.errors.items():
            both = [(r, e, m) for r, e, m in rows if e is not None and m is not None]
            out[k] = {
                "pages": len(rows), "estimable": len(both),
                "eq3_vs_truth": _median([abs(e - r) / r for r, e, _ in both]),
                "mle_vs_truth": _median([abs(m - r) / r for r, _, m in both]),
                "eq3_vs_mle": _median([abs(e - m) / m for _, e, m in both]),
            }
        return out


class TamuraProportional(Tamura):
    name = "tamura_proportional"
    allocate = False
    report_errors = False


class Crawlproj(Tamura):
    """The crawler's schedule with all the evidence it has (:mod:`crawlproj.revisit.estimator`):
    dates where a site's Last-Modified passes :class:`DateCheck` and from sitemaps' lastmod,
    read daily; a pooled prior per directory, else site, else crawl (:class:`GroupPrior`);
    eq. (3)'s smoothed yes/no estimate, shrunk toward the prior, where there are no dates.
    The allocation is the same optimal one over each page's best estimate. A page a sitemap
    says changed since its last fetch is due at once, unless the allocation gives up on it.
    Above the budget's threshold the population prior is flat in log rate, and a page it would
    give up on after yes/no visits that always found a change is probed first
    (:func:`~crawlproj.revisit.schedule.probe_intervals`)."""

    name = "crawlproj"
    reads_sitemaps = True
    report_errors = False
    empirical_bayes = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.md = np.zeros(self.n)  # dated changes
        self.S = np.zeros(self.n)  # time known to be without change
        self.seen = np.full(self.n, np.nan)  # the last dated observation
        sites = int(self.world.site.max()) + 1
        self.site_dates = np.zeros(sites)
        self.site_now_stamped = np.zeros(sites)
        self.prior = GroupPrior()
        self.prior_rate = np.full(self.n, np.nan)
        self.prior_day = -1
        self.grid = RateGrid(high=1.0 / self.policy.min_interval) if self.empirical_bayes else None
        self.lm_errors: dict[int, list[tuple[float, float, float, float]]] = {5: [], 10: [], 20: []}
        self.probes = np.zeros(self.n)  # probes made of each page (probe_intervals)
        self.probe_fetches = 0
        # The first fetch's Last-Modified is evidence as the crawler's (Planner.first) is.
        pages = np.arange(self.n)
        self._dated(pages, 0.0, self._trusted_dates(pages, 0.0, self.last_modified(pages, 0.0, self.true_last)))

    def _dated(self, idx, now, dates):
        self.md[idx], self.S[idx] = dated_observation(self.md[idx], self.S[idx], self.seen[idx], now, dates)
        self.seen[idx] = np.where(np.isnan(dates), self.seen[idx], now)

    def _trusted_dates(self, idx, now, last_modified):
        """DateCheck, per site and vectorised: dates in the future, or at the fetch time on a
        site that stamps most pages so, are not used."""
        site = self.world.site[idx]
        dated = ~np.isnan(last_modified) & (last_modified <= now + 1.0)
        np.add.at(self.site_dates, site[dated], 1)
        np.add.at(self.site_now_stamped, site[dated & (last_modified >= now - 1.0)], 1)
        n = self.site_dates[site]
        trusted = (n < 5) | (self.site_now_stamped[site] < 0.8 * n)
        return np.where(dated & trusted & (last_modified < now - 1.0), last_modified, np.nan)

    def sitemap_read(self, idx, now, lastmod):
        self._dated(idx, now, lastmod)
        changed = (lastmod > self.last[idx]) & np.isfinite(self.interval[idx])
        changed &= self.interval[idx] < self.policy.max_interval
        hit = idx[changed]
        self.due[hit] = np.minimum(self.due[hit], now)

    def _refit_prior(self, now):
        raw = np.where(self.S > 0, np.where(self.md > 0, self.md / np.maximum(self.S, 1e-9), np.nan), np.nan)
        T = np.full(self.n, now)
        binary = smoothed_rate(T, self.U, self.m, self.tc_min)
        raw = np.where(np.isnan(raw) & (self.visits > 1), binary, raw)
        ok = np.isfinite(raw) & (raw > 0)
        logs = np.where(ok, np.log(np.where(ok, raw, 1.0)), 0.0)
        prior = np.full(self.n, np.nan)
        for groups in (self.world.site, self.world.directory):  # the narrower group last, so it wins
            count = np.bincount(groups, weights=ok.astype(float))
            total = np.bincount(groups, weights=logs)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean_log = total / count
                spread = np.bincount(groups, weights=np.where(ok, (logs - mean_log[groups]) ** 2, 0.0)) / count
            has = count >= self.prior.min_pages
            prior = np.where(has[groups], np.exp(mean_log)[groups], prior)
        if self.grid is not None and has.any():  # how alike neighbours are: the group prior's spread
            self.grid.group_sd = float(np.clip(math.sqrt(np.average(spread[has], weights=count[has])), 0.5, 4.0))
        overall = float(np.exp(logs[ok].mean())) if ok.any() else np.nan
        self.prior_rate = np.where(np.isnan(prior), overall, prior)

    def estimate(self, idx, now):
        if self.grid is not None:
            T = np.full(len(idx), now)
            ll = self.grid.loglik(T, self.U[idx], self.m[idx], self.md[idx], self.S[idx], self.tc_min[idx])
            return self.grid.posterior_rate(self.grid.posterior(ll, self.prior_rate[idx]))
        prior = self.prior_rate[idx]
        k = np.where(np.isnan(prior), 0.0, self.prior.strength)
        beta = np.where(np.isnan(prior), 0.0, self.prior.strength / np.where(np.isnan(prior), 1.0, prior))
        T = np.full(len(idx), now)
        binary = smoothed_rate(T, self.U[idx], self.m[idx], self.tc_min[idx])
        with np.errstate(invalid="ignore", divide="ignore"):
            dated = (self.md[idx] + k) / (self.S[idx] + beta)
            shrunk = (np.where(np.isnan(binary), 0.0, binary) * T + k) / (T + beta)
        rate = np.where(self.S[idx] > 0, dated, np.where(np.isnan(binary), prior, shrunk))
        return np.where(np.isfinite(rate) & (rate > 0), rate, binary)

    def after_visit(self, idx, now, span, changed, last_modified):
        self.U[idx] += np.where(changed, 0.0, span)
        self.m[idx] += changed
        self.tc_min[idx] = np.where(changed, np.minimum(self.tc_min[idx], span), self.tc_min[idx])
        self._dated(idx, now, self._trusted_dates(idx, now, last_modified))
        day = int(now // DAY)
        if day != self.prior_day:
            self.prior_day = day
            self._refit_prior(now)
            if self.grid is not None and day % 7 == 0:  # the population's prior, weekly
                sample = self.rng.choice(self.n, min(self.n, 5000), replace=False)
                sample = sample[self.visits[sample] > 1]
                if len(sample):
                    T = np.full(len(sample), now)
                    ll = self.grid.loglik(T, self.U[sample], self.m[sample], self.md[sample], self.S[sample],
                                          self.tc_min[sample])
                    self.grid.fit(ll, censored_above=1.0 / self.mu if self.mu else None)
        self.rate[idx] = self.estimate(idx, now)
        self._record_lm_errors(idx)
        interval = self._allocate(idx, now)
        probe = probe_intervals(self.rate[idx], self.mu, self.U[idx], self.m[idx], self.S[idx], self.probes[idx],
                                self.policy)
        probed = ~np.isnan(probe)
        self.probes[idx] += probed
        self.probe_fetches += int(probed.sum())
        self.interval[idx] = np.where(probed, probe, interval)
        return self.interval[idx]

    def _record_lm_errors(self, idx):
        honest = self.world.lm[idx] == 0
        for i in idx[honest & np.isin(self.visits[idx] - 1, list(self.lm_errors))].tolist():
            if i in self.sampled:  # visits - 1: the visits after the first, as for eq. (3)
                mle = self.md[i] / self.S[i] if self.S[i] > 0 and self.md[i] > 0 else np.nan
                self.lm_errors[int(self.visits[i]) - 1].append(
                    (float(self.rates[i]), float(self.rate[i]), float(mle), float(self.md[i])))

    def lm_error_report(self) -> dict:
        """Median relative errors with honest dates, overall and by the dated changes seen: with
        k changes no estimator does much better than the Gamma(k) spread (about 0.21 at k = 10)."""
        out = {}
        draws = np.random.default_rng(0)
        for k, rows in self.lm_errors.items():
            # What the dates allow: the MLE's error with each page's own count of dated changes, had
            # every one been an exact exponential draw (Gamma(k) exposure); no estimator from the
            # same dates does much better without a sharp prior.
            counts = np.array([d for *_, d in rows if d >= 1])
            bound = np.abs(counts / draws.gamma(counts) - 1) if len(counts) else []
            out[k] = {"pages": len(rows),
                      "with_prior": _median([abs(e - r) / r for r, e, _, _ in rows if np.isfinite(e)]),
                      "dates_only": _median([abs(m - r) / r for r, _, m, _ in rows if np.isfinite(m)]),
                      "bound_from_dated_changes": _median(list(bound)),
                      "by_dated_changes": {
                          (f"{lo}-{hi - 1}" if hi < 10**9 else f"{lo}+"):
                              {"pages": len(sel), "with_prior": _median(sel)}
                          for lo, hi in DATED_CHANGE_BANDS
                          for sel in [[abs(e - r) / r for r, e, _, d in rows if lo <= d < hi and np.isfinite(e)]]}}
        return out


class Oracle(Simulation):
    name = "oracle"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.intervals, _ = optimal_intervals(self.rates, self.budget_per_step * 24 / DAY, None)

    def first_due(self) -> np.ndarray:
        return self.rng.uniform(0, 1, self.n) * np.minimum(self.intervals, 10 * YEAR)

    def after_visit(self, idx, now, span, changed, last_modified):
        return self.intervals[idx]


#: Bands of dated changes the errors with honest dates are broken down by.
DATED_CHANGE_BANDS = ((0, 3), (3, 6), (6, 9), (9, 12), (12, 10**9))


def _median(values: list[float]) -> float | None:
    return round(float(np.median(values)), 4) if values else None


def plots(directory: Path, sim: Tamura, server_pages: int, seed: int) -> list[str]:
    """Figs. 3-5 of the paper from the tamura run: interval histogram, detection against
    interval, and the server-interval distribution (pages grouped into servers)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    files: list[str] = []

    def figure(name: str, draw, xlabel: str, ylabel: str, title: str) -> None:
        fig, ax = plt.subplots(figsize=(6, 4))
        draw(ax)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        files.append(str(directory / name))
        fig.savefig(files[-1], dpi=100)
        plt.close(fig)

    intervals = sim.interval[~np.isnan(sim.interval)] / DAY
    figure("fig3_intervals.png", lambda ax: ax.hist(np.log10(intervals), bins=60),
           "revisit interval, log10 days", "pages", "Revisit intervals (cf. Fig. 3)")
    # Fig. 4: change-detection ratio per page against its interval (m / visits).
    ratio = sim.m / np.maximum(1, sim.visits - 1)
    bins = np.logspace(np.log10(1 / 24), np.log10(400), 30)
    which = np.digitize(sim.interval / DAY, bins)
    centers, means = [], []
    for b in range(1, len(bins)):
        sel = which == b
        if sel.sum() >= 20:
            centers.append(math.sqrt(bins[b - 1] * bins[b]))
            means.append(float(ratio[sel].mean()))
    figure("fig4_detection.png", lambda ax: ax.semilogx(centers, means, marker="o"),
           "revisit interval, days", "change-detection ratio", "Detection against interval (cf. Fig. 4)")
    # Fig. 5: pages grouped into servers of Zipf sizes; 1/L per server.
    rng = np.random.default_rng(seed)
    server = rng.zipf(1.6, sim.n) % max(1, sim.n // server_pages)
    load = np.bincount(server, weights=1.0 / np.where(np.isnan(sim.interval), np.inf, sim.interval))
    required = 1.0 / load[load > 0]
    figure("fig5_server_intervals.png", lambda ax: ax.hist(np.log10(required), bins=60),
           "required server interval 1/L, log10 seconds", "servers", "Server intervals (cf. Fig. 5)")
    return files


class CrawlprojFeeds(Crawlproj):
    """``crawlproj`` reading feeds too (the ``feeds`` regime's extra run; ``crawlproj`` there
    leaves them unread, so the two differ only in the feeds)."""

    name = "crawlproj_feeds"
    reads_feeds = True


REGIMES = {"loguniform": World.loguniform, "realweb": World.realweb, "feeds": World.feeds}
POLICIES = (Uniform, Heritrix, Nutch, StormCrawler, Tamura, TamuraProportional, Crawlproj, Oracle)
HEURISTICS = ("uniform", "heritrix", "nutch", "stormcrawler", "tamura", "tamura_proportional")


def run_regime(regime: str, args, bar) -> tuple[dict, Tamura, Crawlproj]:
    """Every policy on one world; its figures, and the two estimating runs."""
    world = REGIMES[regime](args.pages, np.random.default_rng(args.seed))
    results, runs = {}, {}
    for cls in POLICIES + ((CrawlprojFeeds,) if regime == "feeds" else ()):
        sim = cls(world, args.budget, args.days, args.seed + 1)
        sim.tick = bar.update
        results[cls.name] = sim.run()
        runs[cls.name] = sim
    fresh = {k: v["freshness"] for k, v in results.items()}
    gain = fresh["oracle"] - fresh["uniform"]
    tamura_errors, lm_errors = runs["tamura"].error_report(), runs["crawlproj"].lm_error_report()
    out = {
        "freshness": {k: round(v, 4) for k, v in fresh.items()},
        "age_hours": {k: round(v["age_hours"], 1) for k, v in results.items()},
        "detection_ratio": {k: round(v["detection_ratio"], 4) for k, v in results.items()},
        "fetches_per_day": {k: round(v["fetches_per_day"]) for k, v in results.items()},
        # The share of what knowing every true rate is worth over uniform revisiting.
        "share_of_oracle_gain": {k: round((fresh[k] - fresh["uniform"]) / gain, 3) for k in ("crawlproj", "tamura")},
        "crawlproj_vs_best_heuristic": round(fresh["crawlproj"] / max(fresh[h] for h in HEURISTICS), 3),
        # Fetches the crawlproj policy spent on probes (probe_intervals), as a share of its fetches.
        "crawlproj_probe_share": round(runs["crawlproj"].probe_fetches / max(1, runs["crawlproj"].fetches), 4),
        "errors_after_10": {"last_modified": lm_errors[10]["with_prior"],
                            "last_modified_dates_only": lm_errors[10]["dates_only"],
                            "last_modified_bound": lm_errors[10]["bound_from_dated_changes"],
                            "last_modified_by_dated_changes": lm_errors[10]["by_dated_changes"],
                            "binary": tamura_errors[10]["eq3_vs_truth"], "mle": tamura_errors[10]["mle_vs_truth"]},
        "estimator_errors": {"binary": tamura_errors, "last_modified": lm_errors},
    }
    if "crawlproj_feeds" in results:  # what reading the feeds is worth, at the same budget (feeds included)
        out["feeds"] = {"freshness_gain": round(fresh["crawlproj_feeds"] / fresh["crawlproj"], 3),
                        "share_of_oracle_gain": round((fresh["crawlproj_feeds"] - fresh["uniform"]) / gain, 3),
                        "feed_fetches_per_day": round(results["crawlproj_feeds"]["feed_fetches_per_day"]),
                        "pages_with_feeds": round(float((world.feed > 0).mean()), 3)}
    return out, runs["tamura"], runs["crawlproj"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--budget", type=float, default=10_000, help="fetches per simulated day")
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--regimes", default="loguniform,realweb,feeds",
                        help="comma-separated: loguniform, realweb, feeds")
    parser.add_argument("--plots", default="data/bench/revisit_sim", help="directory for the PNG figures ('' : none)")
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, the same code paths (make test)")
    args = parser.parse_args()
    if args.smoke:
        args.pages, args.budget, args.days, args.plots = 2000, 200.0, 30, ""
    started = time.monotonic()
    regimes = [r for r in args.regimes.split(",") if r]
    out = {"bench": "revisit_sim", "pages": args.pages, "budget_per_day": args.budget, "days": args.days,
           "regimes": {}}
    figures: list[str] = []
    runs = sum(len(POLICIES) + (regime == "feeds") for regime in regimes)
    with progress_bar(runs * args.days * 24, "simulating", "hour") as bar:
        for regime in regimes:
            out["regimes"][regime], tamura, crawlproj = run_regime(regime, args, bar)
            if args.plots and regime == regimes[0]:
                figures = plots(Path(args.plots), crawlproj, 50, args.seed)
    out["plots"] = figures
    out["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(with_peak_rss(out)))


if __name__ == "__main__":
    main()
