"""Per-URL revisit state and the planner that moves it from one visit to the next (pure).

:class:`UrlState` is what the long-term queue keeps per URL (seed 001): first and
last access, ``U``, ``m``, ``t_c min`` (``T`` and ``t_c avg = (T - U) / m`` follow
from them), the current interval and next due time, and what detects a change
next time (content hash, ETag, Last-Modified), and the newest ``<lastmod>`` a sitemap gave.

:class:`Planner` decides the next interval after each visit, by one of two rules:

* ``estimate``: eq. (3)'s ``1/lambda`` times the policy factor; back-off and
  shrink in the singular cases (the paper's rule, :class:`RevisitPolicy`);
* ``budget``: the freshness-optimal share of a revisit budget for the page's
  estimated rate (Cho & Garcia-Molina), never more often than the page changes
  (:func:`~.schedule.budget_intervals`); ``mu`` is set by :meth:`Planner.replan`
  from a sample of rates. ``bench/revisit_sim.py`` measured why this is the default.

Times are crawl-clock seconds: real time times ``REVISIT_TIME_SCALE``.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, replace

import numpy as np

from .estimator import PageHistory, smoothed_rate
from .schedule import RevisitPolicy, budget_intervals, optimal_intervals

SCHEDULES = ("budget", "estimate")


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

    def first(self, url: str, host: str, now: float, depth: int = 0, content_hash: str | None = None,
              etag: str | None = None, last_modified: str | None = None,
              sitemap_lastmod: float | None = None) -> UrlState:
        """The state after a URL's first visit."""
        history = PageHistory(first_access=now, last_access=now)
        interval, rule = self.policy.singular(0.0, 0.0, 0, None, self.rng)
        return UrlState(url, host, history, interval, now + interval, rule, depth=depth,
                        content_hash=content_hash, etag=etag, last_modified=last_modified,
                        sitemap_lastmod=sitemap_lastmod)

    def sitemap_lastmod(self, state: UrlState, lastmod: float, now: float, scale: float = 1.0) -> UrlState | None:
        """The state after a sitemap said the page changed at ``lastmod`` (real Unix seconds), or
        None when that is not news. A change after the last visit makes the page due ``now``
        (crawl clock, ``scale`` times real time), rule ``lastmod``: the site's word is cheaper than
        waiting for the estimate. A lastmod in the future (a wrong clock) counts as now."""
        lastmod = min(lastmod, now / scale)
        if state.sitemap_lastmod is not None and lastmod <= state.sitemap_lastmod:
            return None
        state = replace(state, sitemap_lastmod=lastmod)
        if lastmod > state.history.last_access / scale and state.next_due > now:
            state = replace(state, next_due=now, rule="lastmod")
        return state

    def visit(self, state: UrlState, now: float, changed: bool, *, not_modified: bool = False,
              content_hash: str | None = None, etag: str | None = None,
              last_modified: str | None = None) -> UrlState:
        """The state after a revisit at ``now`` that found the page ``changed`` (or not)."""
        history = state.history.visit(now, changed)
        interval, rule, rate = self.next_interval(history, state.interval)
        return replace(
            state, history=history, interval=interval, next_due=now + interval, rule=rule, rate=rate,
            content_hash=content_hash or state.content_hash, etag=etag or state.etag,
            last_modified=last_modified or state.last_modified, visits=state.visits + 1,
            not_modified=state.not_modified + not_modified, errors=0)

    def failed(self, state: UrlState, now: float) -> UrlState:
        """A revisit that could not be made: try again after the same interval, doubled per
        failure in a row (the history is unchanged: nothing was learnt)."""
        interval = self.policy.clamp(state.interval * 2 ** min(state.errors, 10), self.rng)
        return replace(state, next_due=now + interval, rule="retry", errors=state.errors + 1)

    def next_interval(self, history: PageHistory, last_interval: float | None) -> tuple[float, str, float | None]:
        """(interval, rule, estimated rate) for a page with this history."""
        rate = None
        if history.elapsed > 0:
            rate = float(smoothed_rate(history.elapsed, history.unchanged, history.changes, history.tc_min))
        if self.schedule == "budget" and self.mu is not None and rate is not None:
            return float(budget_intervals(rate, self.mu, self.policy, self.np_rng)), "budget", rate
        interval, rule = self.policy.next_interval(history, last_interval, self.rng)
        return interval, rule, rate

    def replan(self, rates, budget: float) -> float | None:
        """Set ``mu`` so pages changing at ``rates`` (per second) spend ``budget`` fetches per
        second. ``rates`` may be a random sample: scale ``budget`` by the sample's share."""
        rates = np.asarray([r for r in rates if r is not None and r > 0 and math.isfinite(r)], dtype=float)
        if self.schedule != "budget" or len(rates) == 0 or budget <= 0:
            return self.mu
        _, self.mu = optimal_intervals(rates, budget, self.policy, mu_hint=self.mu)
        return self.mu
