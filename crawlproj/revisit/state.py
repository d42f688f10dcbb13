"""Per-URL revisit state and the planner that moves it from one visit to the next (pure).

:class:`UrlState` is what the long-term queue keeps per URL (Tamura and Kitsuregawa): first and
last access, ``U``, ``m``, ``t_c min`` (``T`` and ``t_c avg = (T - U) / m`` follow
from them), the current interval and next due time, and what detects a change
next time (content hash, ETag, Last-Modified), the newest ``<lastmod>`` a sitemap gave, and
the dated evidence (changes with a known date, and the time known to be without change).

:class:`Planner` decides the next interval after each visit, by one of two rules:

* ``estimate``: eq. (3)'s ``1/lambda`` times the policy factor; back-off and
  shrink in the singular cases (the paper's rule, :class:`RevisitPolicy`);
* ``budget``: the freshness-optimal share of a revisit budget for the page's
  estimated rate (Cho & Garcia-Molina), never more often than the page changes
  (:func:`~.schedule.budget_intervals`); ``mu`` is set by :meth:`Planner.replan`
  from a sample of rates. A page it would leave alone on yes/no visits that always found a
  change is first probed sooner (rule ``probe``, :func:`~.schedule.probe_intervals`).
  ``bench/revisit_sim.py`` measured why this is the default.

The rate a page is planned with rests on the best evidence it has (:meth:`Planner.estimate`):
believed dates (Last-Modified, sitemap lastmod), else yes/no visits, else its neighbours'
rate; once :meth:`Planner.fit_priors` has seen enough pages, every estimate is the posterior
under the crawl's own population prior and the page's directory's rate.

Times are crawl-clock seconds: real time times ``REVISIT_TIME_SCALE``.
"""

from __future__ import annotations

import copy
import math
import random
import time
from dataclasses import dataclass, replace

import numpy as np

from .estimator import GroupPrior, PageHistory, RateGrid, dated_observation, dated_rate, smoothed_rate
from .schedule import RevisitPolicy, budget_intervals, optimal_intervals, probe_intervals

SCHEDULES = ("budget", "estimate")


def group_keys(url: str, host: str) -> tuple[str, str]:
    """The groups a page's rate is pooled in, narrowest first: its directory (the host and the
    first path segment), its site."""
    path = url.split("://", 1)[-1].partition("/")[2]
    first = path.split("/", 1)[0] if "/" in path else ""
    return f"{host}/{first}", host


class CrawlClock:
    """Real time times ``scale``: the clock revisit intervals are measured in."""

    def __init__(self, scale: float = 1.0, source=time.time) -> None:
        if scale <= 0:
            raise ValueError("the crawl clock's scale must be positive")
        self.scale, self.source = scale, source

    def now(self) -> float:
        return self.source() * self.scale

    def to_real(self, seconds: float) -> float:
        return seconds / self.scale


@dataclass(frozen=True)
class UrlState:
    """One URL in the long-term queue."""

    url: str
    host: str
    history: PageHistory
    interval: float  # the interval that set next_due
    next_due: float
    rule: str  # first | estimate | budget | backoff | shrink | stretched | retry
    depth: int = 0
    rate: float | None = None  # estimated changes per second (None until a revisit)
    content_hash: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    visits: int = 1
    not_modified: int = 0  # visits answered 304
    errors: int = 0  # revisits that failed in a row
    sitemap_lastmod: float | None = None  # the newest <lastmod> a sitemap gave (real Unix seconds)
    dated_changes: float = 0.0  # changes whose date was known (Last-Modified, sitemap lastmod)
    dated_exposure: float = 0.0  # crawl-clock seconds known to be without change, from those dates
    dated_seen: float | None = None  # the last dated observation (crawl clock)
    source: str = ""  # what the rate rests on: dates | visits | prior (none yet: "")
    probes: int = 0  # visits made as probes before the page would be left alone (probe_intervals)
    kind: str = ""  # "feed": an RSS or Atom feed, revisited before its host's other pages
    planned: float | None = None  # the interval the estimate asked for, when an overload stretched it

    @property
    def plan(self) -> float:
        """The interval the page's estimate asked for: an overload's stretch starts from this, so
        stretches never compound (``interval`` itself, unless stretched)."""
        return self.interval if self.planned is None else self.planned

    @property
    def conditional_headers(self) -> dict[str, str]:
        """If-None-Match / If-Modified-Since for the next visit."""
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


class Planner:
    """Next intervals from histories (see the module docstring)."""

    def __init__(self, policy: RevisitPolicy | None = None, schedule: str = "budget",
                 rng: random.Random | None = None) -> None:
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown revisit schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
        self.policy = policy or RevisitPolicy()
        self.schedule = schedule
        self.rng = rng or random.Random()
        self.np_rng = np.random.default_rng(self.rng.getrandbits(64))
        self.mu: float | None = None  # the budget's multiplier; None until the first replan
        self.groups = GroupPrior()  # each site's and directory's rate
        # The population's prior, up to the fastest rate the schedule can act on.
        self.grid = RateGrid(high=1.0 / self.policy.min_interval)
        self.grid_fitted = False
        self.min_fit = 50  # pages a population prior needs

    def first(self, url: str, host: str, now: float, depth: int = 0, content_hash: str | None = None,
              etag: str | None = None, last_modified: str | None = None,
              sitemap_lastmod: float | None = None, modified_at: float | None = None) -> UrlState:
        """The state after a URL's first visit. ``modified_at``: the page's last change (crawl
        clock) from a believed Last-Modified; one date already gives a rate (module docstring of
        :mod:`.estimator`). Without one, the page starts at its neighbours' rate when the prior
        knows them, else at a first interval."""
        history = PageHistory(first_access=now, last_access=now)
        state = UrlState(url, host, history, 0.0, now, "first", depth=depth, content_hash=content_hash, etag=etag,
                         last_modified=last_modified, sitemap_lastmod=sitemap_lastmod)
        state = self._dated(state, now, modified_at)
        rate, source = self.estimate(state)
        if self.schedule == "budget" and self.mu is not None and rate is not None:
            interval, rule = float(budget_intervals(rate, self.mu, self.policy, self.np_rng)), f"budget/{source}"
        else:
            interval, rule = self.policy.singular(0.0, 0.0, 0, None, self.rng)
        return replace(state, interval=interval, next_due=now + interval, rule=rule, rate=rate, source=source)

    def _dated(self, state: UrlState, now: float, modified_at: float | None) -> UrlState:
        if modified_at is None:
            return state
        changes, exposure = dated_observation(state.dated_changes, state.dated_exposure, state.dated_seen, now,
                                              modified_at)
        return replace(state, dated_changes=float(changes), dated_exposure=float(exposure), dated_seen=now)

    def estimate(self, state: UrlState) -> tuple[float | None, str]:
        """(rate per crawl-clock second, what it rests on) from the best evidence the page has:
        the posterior under the crawl's prior (:class:`~.estimator.RateGrid`) once fitted, else
        its dates (``m_d / S``), else eq. (3) smoothed; a page with neither starts at its
        neighbours' rate (``prior``), or has none yet."""
        h = state.history
        if state.dated_exposure <= 0 and h.elapsed <= 0:
            prior = self.group_rate(state.url, state.host)
            return (prior, "prior") if prior else (None, "")
        source = "dates" if state.dated_exposure > 0 else "visits"
        if self.grid_fitted:
            ll = self.grid.loglik([h.elapsed], [h.unchanged], [h.changes], [state.dated_changes],
                                  [state.dated_exposure], [h.tc_min])
            prior = self.group_rate(state.url, state.host)
            post = self.grid.posterior(ll, [prior if prior else math.nan])
            return float(self.grid.posterior_rate(post)[0]), source
        if source == "dates":
            pseudo = self.groups.pseudo(self.group_rate(state.url, state.host))
            return float(dated_rate(state.dated_changes, state.dated_exposure, *pseudo)), source
        return float(smoothed_rate(h.elapsed, h.unchanged, h.changes, h.tc_min)), source

    def group_rate(self, url: str, host: str) -> float | None:
        return self.groups.prior(*group_keys(url, host))

    def fit_priors(self, states: list[UrlState]) -> None:
        """The crawl's priors from a sample of its pages: each directory's and site's rate
        (:class:`~.estimator.GroupPrior`) and the population's (:class:`~.estimator.RateGrid`)."""
        self.use_priors(*self.fitted_priors(states))

    def fitted_priors(self, states: list[UrlState]) -> tuple[GroupPrior, RateGrid | None]:
        """The priors :meth:`fit_priors` sets, fitted to ``states`` into new objects (None: too
        few pages for the population's), the planner's own untouched: a replan fits them in a
        thread while the crawl goes on planning with the ones in use."""
        raw: dict[str, list[float]] = {}
        rows = []
        for st in states:
            h = st.history
            if st.dated_exposure > 0 and st.dated_changes > 0:
                rate = st.dated_changes / st.dated_exposure
            elif h.elapsed > 0:
                rate = float(smoothed_rate(h.elapsed, h.unchanged, h.changes, h.tc_min))
            else:
                continue
            for key in group_keys(st.url, st.host):
                raw.setdefault(key, []).append(rate)
            rows.append((h.elapsed, h.unchanged, h.changes, st.dated_changes, st.dated_exposure, h.tc_min))
        groups = copy.copy(self.groups)
        groups.fit({k: np.asarray(v) for k, v in raw.items()})
        if len(rows) < self.min_fit:
            return groups, None
        T, U, m, md, S, tc_min = (np.asarray(c, dtype=float) for c in zip(*rows))
        grid = copy.copy(self.grid)
        # Above the budget's threshold the visits cannot tell rates apart (RateGrid.fit).
        grid.fit(grid.loglik(T, U, m, md, S, tc_min), censored_above=1.0 / self.mu if self.mu else None)
        return groups, grid

    def use_priors(self, groups: GroupPrior, grid: RateGrid | None) -> None:
        """Plan with priors from :meth:`fitted_priors` (a grid of None keeps the population's as it is)."""
        self.groups = groups
        if grid is not None:
            self.grid, self.grid_fitted = grid, True

    def sitemap_lastmod(self, state: UrlState, lastmod: float, now: float, scale: float = 1.0) -> UrlState | None:
        """The state after a sitemap said the page changed at ``lastmod`` (real Unix seconds), or
        None when that is not news. A change after the last visit makes the page due ``now``
        (crawl clock, ``scale`` times real time), rule ``lastmod``: the site's word is cheaper than
        waiting for the estimate. A lastmod in the future (a wrong clock) counts as now."""
        lastmod = min(lastmod, now / scale)
        if state.sitemap_lastmod is not None and lastmod <= state.sitemap_lastmod:
            return None
        state = self._dated(replace(state, sitemap_lastmod=lastmod), now, lastmod * scale)
        if lastmod > state.history.last_access / scale and state.next_due > now:
            state = replace(state, next_due=now, rule="lastmod")
        return state

    def visit(self, state: UrlState, now: float, changed: bool, *, not_modified: bool = False,
              content_hash: str | None = None, etag: str | None = None,
              last_modified: str | None = None, modified_at: float | None = None) -> UrlState:
        """The state after a revisit at ``now`` that found the page ``changed`` (or not);
        ``modified_at``: its last change (crawl clock) from a believed Last-Modified."""
        state = self._dated(replace(state, history=state.history.visit(now, changed)), now, modified_at)
        interval, rule, rate, source = self.next_interval(state)
        return replace(
            state, interval=interval, next_due=now + interval, rule=rule, rate=rate, source=source,
            probes=state.probes + (rule == "probe"),
            content_hash=content_hash or state.content_hash, etag=etag or state.etag,
            last_modified=last_modified or state.last_modified, visits=state.visits + 1,
            not_modified=state.not_modified + not_modified, errors=0, planned=None)

    def failed(self, state: UrlState, now: float) -> UrlState:
        """A revisit that could not be made: try again after the same interval, doubled per
        failure in a row (the history is unchanged: nothing was learnt)."""
        interval = self.policy.clamp(state.interval * 2 ** min(state.errors, 10), self.rng)
        return replace(state, next_due=now + interval, rule="retry", errors=state.errors + 1)

    def next_interval(self, state: UrlState) -> tuple[float, str, float | None, str]:
        """(interval, rule, estimated rate, its source) for a page in this state."""
        rate, source = self.estimate(state)
        if self.schedule == "budget" and self.mu is not None and rate is not None:
            h = state.history
            probe = float(probe_intervals(rate, self.mu, h.unchanged, h.changes, state.dated_exposure, state.probes,
                                          self.policy))
            if not math.isnan(probe):
                return probe, "probe", rate, source
            return float(budget_intervals(rate, self.mu, self.policy, self.np_rng)), "budget", rate, source
        interval, rule = self.policy.next_interval(state.history, state.plan, self.rng)
        return interval, rule, rate, source

    def replan(self, rates, budget: float) -> float | None:
        """Set ``mu`` so pages changing at ``rates`` (per second) spend ``budget`` fetches per
        second. ``rates`` may be a random sample: scale ``budget`` by the sample's share."""
        self.mu = self.planned_mu(rates, budget)
        return self.mu

    def planned_mu(self, rates, budget: float) -> float | None:
        """The ``mu`` :meth:`replan` sets, without setting it."""
        rates = np.asarray([r for r in rates if r is not None and r > 0 and math.isfinite(r)], dtype=float)
        if self.schedule != "budget" or len(rates) == 0 or budget <= 0:
            return self.mu
        return optimal_intervals(rates, budget, self.policy, mu_hint=self.mu)[1]
