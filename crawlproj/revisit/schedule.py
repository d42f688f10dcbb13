"""Revisit intervals and the server load index (pure; no Twisted, no I/O).

* :class:`RevisitPolicy` turns a page's history into its next revisit interval:
  eq. (3)'s estimate times a policy factor; exponential back-off when the page
  never changed (``U = T``); shrinking when it always changed (``U = 0``); uniform
  random in a range after the first access; clamped to ``[min, 400 days]``, and
  any interval over 400 days replaced by a uniform draw in 300-400 days (Tamura and Kitsuregawa).
* :class:`ServerLoad` keeps ``L_i = sum of 1/T_ij`` over a server's pages
  incrementally. ``1/L_i`` is the server interval its schedule requires; below the
  polite minimum the server is overloaded, and :meth:`ServerLoad.relieve` makes the
  schedule feasible by stretching every interval in proportion, or by dropping the
  least valuable pages.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np

from .estimator import PageHistory

DAY = 86_400.0
#: Seed 001's cap: revisit intervals over 400 days become uniform random in 300-400 days.
CAP = 400 * DAY
CAP_REDRAW = (300 * DAY, 400 * DAY)


@dataclass(frozen=True)
class RevisitPolicy:
    """How the next interval follows from the history. Times in seconds."""

    min_interval: float = 3600.0
    max_interval: float = CAP
    first_interval: tuple[float, float] = (DAY, 7 * DAY)  # the second visit: uniform in this range
    backoff: float = 2.0  # never changed: the last interval times this
    shrink: float = 0.5  # always changed: the last interval times this
    factor: float = 1.0  # the revisit interval is the estimated 1/lambda times this
    # budget schedule: no revisit before the page has changed with this probability (ample budgets)
    min_change: float = 0.1
    # budget schedule: visits at half the threshold interval before a page is left alone on
    # yes/no visits that always found a change (probe_intervals)
    probes: int = 2

    def __post_init__(self) -> None:
        if not 0 < self.min_interval <= self.max_interval <= CAP:
            raise ValueError("need 0 < min_interval <= max_interval <= 400 days")
        if self.backoff < 1 or not 0 < self.shrink <= 1 or self.factor <= 0 or not 0 <= self.min_change < 1:
            raise ValueError("need backoff >= 1, 0 < shrink <= 1, factor > 0 and 0 <= min_change < 1")
        if self.probes < 0:
            raise ValueError("need probes >= 0")

    def next_interval(self, history: PageHistory, last_interval: float | None, rng: random.Random) -> tuple[float, str]:
        """(seconds until the next visit, the rule that set it)."""
        estimate = history.mean_change_interval()
        if estimate is not None and last_interval is not None:
            return self.clamp(self.factor * estimate, rng), "estimate"
        return self.singular(history.elapsed, history.unchanged, history.changes, last_interval, rng)

    def singular(self, T: float, U: float, m: int, last_interval: float | None,  # noqa: N803
                 rng: random.Random) -> tuple[float, str]:
        """The interval where eq. (3) has no estimate: after the first access, never changed
        (``U = T``) or always changed (``U = 0``)."""
        if T <= 0 or last_interval is None:
            return self.clamp(rng.uniform(*self.first_interval), rng), "first"
        if m == 0:  # U = T: never changed
            return self.clamp(last_interval * self.backoff, rng), "backoff"
        return self.clamp(last_interval * self.shrink, rng), "shrink"  # U = 0: always changed

    def clamp_array(self, seconds: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """:meth:`clamp` on many intervals at once."""
        seconds = np.asarray(seconds, dtype=float)
        redraw = ~np.isfinite(seconds) | (seconds > CAP)
        clamped = np.clip(np.where(redraw, 0.0, seconds), self.min_interval, self.max_interval)
        return np.where(redraw, rng.uniform(*CAP_REDRAW, size=seconds.shape), clamped)

    def clamp(self, seconds: float, rng: random.Random) -> float:
        if not math.isfinite(seconds) or seconds > CAP:
            return rng.uniform(*CAP_REDRAW)  # spreads the long-interval pages over 100 days
        return min(max(seconds, self.min_interval), self.max_interval)


# -- the freshness-optimal allocation (Cho & Garcia-Molina) -----------------------
# Visiting page i f_i times per second keeps it fresh a share F = (f/l)(1 - exp(-l/f)) of the
# time. Maximising sum F under sum f = budget gives dF/df = mu for every revisited page:
# g(x) = 1 - (1 + x) exp(-x) = mu * l, with x = l / f the changes expected per interval.
# Pages with mu * l >= 1 change too fast to be worth any budget. g is tabulated once.
_X = np.logspace(-6, 2.6, 6000)
_G = -np.expm1(-_X) - _X * np.exp(-_X)


def _changes_per_interval(y: np.ndarray) -> np.ndarray:
    """g^-1(y) for 0 <= y < 1 (NaN where y >= 1: not worth revisiting)."""
    x = np.interp(y, _G, _X)
    x = np.where(y < _G[0], np.sqrt(2 * np.maximum(y, 0)), x)  # g(x) ~ x^2 / 2 near 0
    return np.where(y >= _G[-1], np.nan, x)


def allocate_intervals(rates, mu: float) -> np.ndarray:
    """The freshness-optimal interval (seconds) of pages changing at ``rates`` for the
    multiplier ``mu``; ``inf`` for pages not worth revisiting (``mu * rate >= 1``)."""
    rates = np.asarray(rates, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = _changes_per_interval(mu * rates) / rates
    return np.where(np.isnan(raw), np.inf, raw)


def budget_intervals(rates, mu: float, policy: RevisitPolicy, rng: np.random.Generator) -> np.ndarray:
    """The ``budget`` schedule: the freshness-optimal interval for ``mu``, but never so short
    that the page has changed with probability below ``policy.min_change`` by then.

    When the budget is short the allocation decides (pages changing too fast to keep fresh
    are left for the longest interval); when it is ample, the floor keeps a page that rarely
    changes from being fetched at the budget's pace. In the simulation a floor of 0.1 cost
    no freshness at a short budget (0.4485 against 0.4483 without; 0.2 cost 0.004).
    """
    rates = np.asarray(rates, dtype=float)
    with np.errstate(divide="ignore"):
        floor = -math.log1p(-policy.min_change) / rates
    return policy.clamp_array(np.maximum(allocate_intervals(rates, mu), floor), rng)


def probe_intervals(rates, mu: float, unchanged, changes, dated_exposure, probes,
                    policy: RevisitPolicy) -> np.ndarray:
    """The interval of a probe for each page that is due one, else NaN.

    A page the budget would leave alone (``mu * rate >= 1``) on yes/no visits alone (no dates)
    that found it changed every time (``changes > 0``, ``unchanged = 0``) is first visited up
    to ``policy.probes`` times at ``mu / 2``.
    Every page that changes within the interval between visits looks the same to them, those
    worth keeping fresh and those that change too fast; the population prior above the
    threshold (:meth:`~.estimator.RateGrid.fit`) takes them all for fast. A visit sooner tells
    them apart: at ``mu / 2`` a page at the threshold is found unchanged with chance 0.61, one
    four times faster with 0.14. One unchanged probe puts the page back in the allocation; a
    changed one, counted at its own length (:meth:`~.estimator.RateGrid.loglik`), confirms it.
    In ``bench/revisit_sim.py`` (``loguniform``) two probes a page, with that likelihood, raised
    the share of the oracle's gain from 33% (the flat prior alone) to 61%, for 2.4% of the
    fetches; one probe reached 51% (20,000 pages).
    """
    rates, unchanged, changes, dated_exposure, probes = (
        np.asarray(x, dtype=float) for x in (rates, unchanged, changes, dated_exposure, probes))
    with np.errstate(invalid="ignore"):
        due = (mu * rates >= 1) & (changes > 0) & (unchanged <= 0) & (dated_exposure <= 0) & (probes < policy.probes)
    return np.where(due, max(mu / 2, policy.min_interval), np.nan)


def optimal_intervals(rates, budget: float, policy: RevisitPolicy | None = None,
                      mu_hint: float | None = None) -> tuple[np.ndarray, float]:
    """Revisit intervals (seconds) for pages changing at ``rates`` (per second) that maximise
    mean freshness at ``budget`` fetches per second, and the multiplier ``mu`` found.

    With a ``policy`` the intervals are clamped to its range and pages not worth revisiting
    get its longest interval (a crawler still looks now and then); without one they get
    ``inf``. ``mu_hint`` (the last ``mu``) narrows the search.
    """
    rates = np.asarray(rates, dtype=float)
    lo_i = policy.min_interval if policy else 0.0
    hi_i = policy.max_interval if policy else np.inf

    def intervals(mu: float) -> np.ndarray:
        return np.clip(allocate_intervals(rates, mu), lo_i, hi_i)

    def spend(log_mu: float) -> float:
        return float((1.0 / intervals(math.exp(log_mu))).sum())

    # Bracket log(mu) with steps growing from the hint (the last day's mu is usually close),
    # then bisect to 1e-4: mu to 0.01%, far finer than the estimates it divides the budget over.
    lo = hi = math.log(mu_hint) if mu_hint else -math.log(float(np.median(rates)) + 1e-300)
    step = 0.05 if mu_hint else 2.0
    if spend(lo) < budget:  # smaller mu: more fetches
        while spend(lo) < budget and lo > -700:
            hi, lo, step = lo, lo - step, step * 2
    else:
        while spend(hi) > budget and hi < 700:
            lo, hi, step = hi, hi + step, step * 2
    while hi - lo > 1e-4:
        mid = (lo + hi) / 2
        if spend(mid) > budget:
            lo = mid
        else:
            hi = mid
    mu = math.exp(hi)
    return intervals(mu), mu


@dataclass
class ServerLoad:
    """``L = sum of 1/T_j`` over one server's pages, kept incrementally as intervals change."""

    intervals: dict[str, float] = field(default_factory=dict)
    load: float = 0.0  # pages per second the schedule asks of the server

    def set(self, url: str, interval: float) -> None:
        old = self.intervals.get(url)
        if old is not None:
            self.load -= 1.0 / old
        self.intervals[url] = interval
        self.load += 1.0 / interval

    def remove(self, url: str) -> None:
        old = self.intervals.pop(url, None)
        if old is not None:
            self.load -= 1.0 / old
        if not self.intervals:
            self.load = 0.0  # no drift left behind by float sums

    @property
    def required_interval(self) -> float:
        """``1/L``: the longest server interval that still keeps every page's schedule."""
        return 1.0 / self.load if self.load > 0 else math.inf

    def overloaded(self, polite_interval: float) -> bool:
        return self.required_interval < polite_interval * (1 - 1e-9)

    def relieve(self, polite_interval: float, mode: str = "stretch",
                value: dict[str, float] | None = None) -> tuple[dict[str, float], list[str]]:
        """Make the schedule feasible at ``polite_interval``; return (new intervals, dropped URLs).

        ``stretch`` multiplies every interval by ``polite_interval x L`` (then ``1/L`` is
        exactly the polite interval). ``drop`` removes pages, least valuable first
        (``value``: higher is kept; by default every page is worth 1 and the costliest,
        shortest-interval pages go first), until ``1/L`` reaches the polite interval.
        """
        if not self.overloaded(polite_interval):
            return {}, []
        if mode == "stretch":
            scale = polite_interval * self.load
            changed = {url: interval * scale for url, interval in self.intervals.items()}
            for url, interval in changed.items():
                self.set(url, interval)
            return changed, []
        if mode != "drop":
            raise ValueError(f"unknown overload mode {mode!r}")
        worth = value or {}
        order = sorted(self.intervals, key=lambda u: (worth.get(u, 1.0), self.intervals[u]))
        dropped = []
        for url in order:
            if not self.overloaded(polite_interval):
                break
            self.remove(url)
            dropped.append(url)
        return {}, dropped
