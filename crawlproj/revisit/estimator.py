"""Change-rate estimation from a page's visit history (pure; no Twisted, no I/O).

A page is visited at irregular intervals; each visit tells only whether it
changed since the last one. Per page we keep O(1) state (Tamura & Kitsuregawa,
DESIGN.md section 4):

* ``T``: time since the first access; ``U``: the sum of the intervals in which no
  change was detected; ``m``: the number of intervals with a change;
* ``tc_min``: the shortest interval with a change; ``t_c avg = (T - U) / m``.

Eq. (3) estimates the mean time between changes as ``1/lambda ~= t_c / log(T / U)``,
with ``t_c`` the geometric mean of ``tc_min`` and ``t_c avg``. It is defined for
``0 < U < T``; the singular cases (``T = 0``: one visit; ``U = T``: never changed;
``U = 0``: always changed) have no estimate and are scheduled by back-off
(:mod:`.schedule`).

:func:`mle_rate` is the exact maximum-likelihood estimate of Cho & Garcia-Molina
(ACM TOIT 2003) for irregular intervals, the reference eq. (3) is measured
against; it needs every interval, so it is not kept on the hot path.

The functions take floats or numpy arrays alike (the simulation runs them on
100,000 pages at once).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class PageHistory:
    """What the estimator keeps about one page (times in seconds)."""

    first_access: float
    last_access: float
    unchanged: float = 0.0  # U
    changes: int = 0  # m
    tc_min: float = math.inf

    @property
    def elapsed(self) -> float:  # T
        return self.last_access - self.first_access

    def visit(self, now: float, changed: bool) -> PageHistory:
        """The history after a visit at ``now`` that found the page ``changed`` (or not)."""
        interval = max(0.0, now - self.last_access)
        if changed:
            return replace(self, last_access=now, changes=self.changes + 1, tc_min=min(self.tc_min, interval))
        return replace(self, last_access=now, unchanged=self.unchanged + interval)

    def mean_change_interval(self) -> float | None:
        """Eq. (3)'s estimate of 1/lambda in seconds, or None in a singular case."""
        value = float(mean_change_interval(self.elapsed, self.unchanged, self.changes, self.tc_min))
        return None if math.isnan(value) else value


def mean_change_interval(T, U, m, tc_min):  # noqa: N803 - the paper's names
    """Eq. (3): ``t_c / log(T / U)`` with ``t_c = sqrt(tc_min * (T - U) / m)``; NaN where singular
    (``T <= 0``, ``U <= 0``, ``U >= T`` or ``m = 0``)."""
    T, U, m, tc_min = (np.asarray(x, dtype=float) for x in (T, U, m, tc_min))
    with np.errstate(divide="ignore", invalid="ignore"):
        value = _tc(T, U, m, tc_min) / np.log(T / U)
    return np.where(_estimable(T, U, m), value, np.nan)


def _estimable(T, U, m):  # noqa: N803
    """Where eq. (3) is defined: 0 < U < T, with at least one change."""
    return (T > 0) & (U > 0) & (U < T) & (m > 0)


def _tc(T, U, m, tc_min):  # noqa: N803
    """The geometric mean of t_c min and t_c avg = (T - U) / m (NaN or inf where m = 0)."""
    tc_avg = (T - U) / m
    return np.sqrt(np.minimum(tc_min, tc_avg) * tc_avg)  # tc_min <= tc_avg always; guard rounding


def mle_rate(changed: Sequence[float], unchanged: Sequence[float], tol: float = 1e-12) -> float | None:
    """Cho & Garcia-Molina's MLE of lambda (changes per second) from irregular intervals.

    Solves ``sum over changed intervals t / (exp(lambda t) - 1) = sum of unchanged intervals``.
    The left side falls strictly from +inf to 0 as lambda grows, so there is exactly one root
    when some intervals changed and some did not; otherwise None (lambda is 0 or unbounded).
    Bisection on log(lambda), bracketed by doubling: it cannot diverge.
    """
    tc = np.asarray([t for t in changed if t > 0], dtype=float)
    u = float(sum(unchanged))
    if len(tc) == 0 or u <= 0:
        return None

    def excess(rate: float) -> float:
        x = rate * tc
        # t / expm1(x), with the large-x tail as 0 rather than overflow
        terms = np.where(x > 700, 0.0, tc / np.expm1(np.minimum(x, 700)))
        return float(terms.sum()) - u

    lo = hi = 1.0 / float(tc.mean() + u / len(tc))
    while excess(lo) < 0:
        lo /= 2
    while excess(hi) > 0:
        hi *= 2
    log_lo, log_hi = math.log(lo), math.log(hi)
    for _ in range(200):
        mid = (log_lo + log_hi) / 2
        if excess(math.exp(mid)) > 0:
            log_lo = mid
        else:
            log_hi = mid
        if log_hi - log_lo < tol:
            break
    return math.exp((log_lo + log_hi) / 2)


def smoothed_rate(T, U, m, tc_min):  # noqa: N803 - the paper's names
    """lambda (per second) for every history with at least one revisit, singular ones included.

    Where eq. (3) is defined it is used as is. Otherwise, as if one more interval had gone
    the other way (add-one smoothing):

    * ``U = 0`` (every interval changed): one more unchanged interval of the mean length gives
      ``lambda = log(m + 1) / t_c``, growing with each change seen;
    * ``U = T`` (never changed): one more changed interval gives about ``lambda = log 2 / T``,
      falling as the page stays the same.

    A budgeted schedule needs a rate for every page: the paper's shrink rule for ``U = 0``
    would drive a page that changes faster than it is visited down to the minimum interval,
    spending the budget where freshness cannot be won (Cho & Garcia-Molina).
    """
    T, U, m, tc_min = (np.asarray(x, dtype=float) for x in (T, U, m, tc_min))
    with np.errstate(divide="ignore", invalid="ignore"):
        tc = _tc(T, U, m, tc_min)
        eq3 = np.where(_estimable(T, U, m), np.log(T / U) / tc, np.nan)
        always = np.log(m + 1) / tc
        never = math.log(2) / T
    value = np.where(np.isnan(eq3), np.where(m > 0, always, never), eq3)
    return np.where(T > 0, value, np.nan)


# -- dated evidence: Last-Modified and sitemap <lastmod> -----------------------
#
# When a visit also tells *when* the page last changed (an honest Last-Modified, or a
# sitemap's lastmod), each observation is a backward-recurrence time of the Poisson
# process: the page did not change between that date and the observation, and changed at
# that date. Over observations x_1 < x_2 < ... with dates L_1, L_2, ..., the likelihood is
#   prod over dated changes [lambda exp(-lambda (x_i - L_i))] * prod over the rest [exp(-lambda span_i)]
# (a change at L_i in (x_{i-1}, x_i], none after it; no change in a span whose date did not
# move), so the maximum-likelihood rate is  m_d / S,  m_d the dated changes and S the time
# known to be without change (Cho & Garcia-Molina 2003, the estimator with last-modified
# dates). The first observation counts too: by memorylessness its backward-recurrence time
# x_1 - L_1 is an exponential draw like any other. Two numbers per page, updated in O(1).

def dated_observation(changes, exposure, last_seen, now, last_modified):
    """(dated changes, exposure) after an observation at ``now`` whose date of last change is
    ``last_modified``; the previous dated observation was at ``last_seen`` (NaN or None: this
    is the first). Arrays or floats alike; a NaN ``last_modified`` leaves the counts as they were."""
    changes, exposure, now, last_modified = (np.asarray(x, dtype=float) for x in (changes, exposure, now, last_modified))
    last_seen = np.asarray(np.nan if last_seen is None else last_seen, dtype=float)
    dated = ~np.isnan(last_modified) & (last_modified <= now)
    first = np.isnan(last_seen)
    with np.errstate(invalid="ignore"):
        moved = dated & (first | (last_modified > last_seen))
    span = np.where(first, 0.0, np.maximum(0.0, now - np.where(first, now, last_seen)))
    gained = np.where(moved, now - last_modified, np.where(dated, span, 0.0))
    return changes + moved, exposure + gained


def dated_rate(changes, exposure, prior_changes=0.0, prior_exposure=0.0):
    """The rate (per second) from dated evidence, shrunk toward a prior of ``prior_changes``
    pseudo-changes over ``prior_exposure`` seconds (the Gamma prior's posterior mean; with no
    prior, the MLE ``m_d / S``). NaN where there is neither evidence nor prior."""
    changes, exposure = np.asarray(changes, dtype=float), np.asarray(exposure, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = (changes + prior_changes) / (exposure + prior_exposure)
    return np.where((exposure + prior_exposure) > 0, rate, np.nan)


class DateCheck:
    """Whether a host's Last-Modified dates can be believed (pure).

    A date in the future is never believed. A host whose dates equal the fetch time (within
    ``tolerance`` seconds) on ``share`` of at least ``min_dates`` fetches stamps its pages
    with the time of the request: its dates say nothing, and its pages fall back on yes/no
    visits until that changes.
    """

    def __init__(self, tolerance: float = 2.0, min_dates: int = 5, share: float = 0.8) -> None:
        self.tolerance, self.min_dates, self.share = tolerance, min_dates, share
        self.dates: dict[str, int] = {}
        self.now_stamped: dict[str, int] = {}

    def observe(self, host: str, fetched_at: float, last_modified: float | None) -> float | None:
        """Record one fetch's date; return it if it may be used, else None."""
        if last_modified is None or last_modified > fetched_at + self.tolerance:
            return None
        self.dates[host] = self.dates.get(host, 0) + 1
        if last_modified >= fetched_at - self.tolerance:
            self.now_stamped[host] = self.now_stamped.get(host, 0) + 1
        return last_modified if self.trusted(host) and last_modified < fetched_at - self.tolerance else None

    def trusted(self, host: str) -> bool:
        n = self.dates.get(host, 0)
        return n < self.min_dates or self.now_stamped.get(host, 0) < self.share * n


class GroupPrior:
    """A pooled prior per group of pages (a site, or a directory of one): empirical Bayes (pure).

    Each group's prior rate is the geometric mean of its pages' current estimates (rates
    span orders of magnitude, so they are pooled in logs), from at least ``min_pages`` of
    them; else the parent group's, else the crawl's. A page is then estimated as if it had
    also seen ``strength`` changes in ``strength / prior`` seconds: a new page starts at its
    neighbours' rate, and a noisy estimate is pulled toward them until its own evidence
    outweighs them.
    """

    def __init__(self, strength: float = 1.0, min_pages: int = 3) -> None:
        self.strength, self.min_pages = strength, min_pages
        self.means: dict[str, float] = {}  # group -> prior rate
        self.overall: float | None = None

    def fit(self, groups: dict[str, np.ndarray]) -> None:
        """Set every group's prior from its pages' estimated rates (``{group: rates}``)."""
        means, pooled = {}, []
        for group, rates in groups.items():
            rates = np.asarray(rates, dtype=float)
            rates = rates[np.isfinite(rates) & (rates > 0)]
            pooled.append(np.log(rates))
            if len(rates) >= self.min_pages:
                means[group] = float(np.exp(np.log(rates).mean()))
        logs = np.concatenate(pooled) if pooled else np.array([])
        self.overall = float(np.exp(logs.mean())) if len(logs) else None
        self.means = means

    def prior(self, *groups: str) -> float | None:
        """The prior rate of the first of ``groups`` (narrowest first) that has one."""
        return next((self.means[g] for g in groups if g in self.means), self.overall)

    def pseudo(self, prior: float | None) -> tuple[float, float]:
        """(pseudo-changes, pseudo-exposure) of a prior rate (none: no prior)."""
        return (self.strength, self.strength / prior) if prior else (0.0, 0.0)


class RateGrid:
    """Empirical Bayes over all pages: a prior on a grid of rates fitted to the crawl's own
    pages, and each page's posterior under it (pure, vectorised).

    Yes/no visits that always found a change bound a rate from below only: eq. (3) has no
    estimate and any smoothing is a guess. The crawl's population says what such pages are
    like, as far as its visits can tell (:meth:`fit`): the prior is the nonparametric
    maximum-likelihood mixture over the grid (EM), and a
    page's posterior weighs its own likelihood by it. A page's likelihood is that of its yes/no
    intervals, taken as its shortest changed interval, ``m - 1`` changed intervals of their mean
    length and ``U`` unchanged time (exact for regular visits), or, with dates,
    ``md log lambda - lambda S``. An optional
    second prior per page (its neighbours' log-rate, with spread ``group_sd``) sharpens it.
    """

    def __init__(self, low: float = 1 / (4 * 365 * 86400.0), high: float = 1 / 600.0, points: int = 64,
                 group_sd: float = 1.5) -> None:
        self.rates = np.geomspace(low, high, points)
        self.logs = np.log(self.rates)
        self.log_weights = np.full(points, -math.log(points))
        self.group_sd = group_sd

    def loglik(self, T, U, m, changes=None, exposure=None, tc_min=None):
        """Each page's log-likelihood on the grid, shape (pages, points). With ``tc_min`` (the
        shortest interval with a change; inf: none) that interval counts at its own length and
        the other changed ones at their mean: a short visit that still found a change is what
        tells a fast page from one merely visited seldom, and the mean would dilute it."""
        T, U, m = (np.asarray(x, dtype=float)[:, None] for x in (T, U, m))
        lam = self.rates[None, :]

        def changed_within(t):  # log P(a change within t)
            return np.log(-np.expm1(-lam * np.maximum(t, 1e-9)))

        with np.errstate(divide="ignore", invalid="ignore"):
            mean = (T - U) / np.maximum(m, 1)  # without tc_min every changed interval is at the mean
            shortest = mean if tc_min is None else np.asarray(tc_min, dtype=float)[:, None]
            shortest = np.where(np.isfinite(shortest), shortest, 0.0)
            rest = np.where(m > 1, (T - U - shortest) / np.maximum(m - 1, 1), 0.0)
            binary = changed_within(shortest) + np.where(m > 1, (m - 1) * changed_within(rest), 0.0)
        binary = np.where(m > 0, binary - lam * U, -lam * U)
        if changes is None:
            return binary
        md, S = (np.asarray(x, dtype=float)[:, None] for x in (changes, exposure))
        return np.where(S > 0, md * np.log(lam) - lam * S, binary)

    def fit(self, ll, iterations: int = 25, censored_above: float | None = None) -> None:
        """The prior: EM for the mixture weights that best explain the pages' likelihoods.

        ``censored_above`` (a rate): the prior's mass above it is spread flat in log rate up to
        the grid's top. Pages whose visits all found a change say only that they change faster
        than about once an interval; the maximum-likelihood mixture piles all of them on the
        slowest rate that explains them, which settles at the budget's threshold (``1 / mu``),
        so each of them looks just worth revisiting. How that mass lies above the threshold the
        visits cannot tell; flat in log rate is the prior of not knowing. In
        ``bench/revisit_sim.py`` (``loguniform``) it raised the share of the oracle's gain from
        23% to 33%: pages that change faster than they can be kept fresh are left alone.
        """
        logw = self.log_weights
        for _ in range(iterations):
            post = ll + logw[None, :]
            post -= post.max(axis=1, keepdims=True)
            p = np.exp(post)
            p /= p.sum(axis=1, keepdims=True)
            logw = np.log(np.maximum(p.mean(axis=0), 1e-300))
        if censored_above is not None and math.isfinite(censored_above):
            tail = self.rates >= censored_above
            if tail.any():
                weights = np.exp(logw)
                weights[tail] = weights[tail].sum() / tail.sum()
                logw = np.log(np.maximum(weights, 1e-300))
        self.log_weights = logw

    def posterior(self, ll, group_rate=None):
        """Each page's posterior over the grid, shape (pages, points); ``group_rate`` (NaN:
        none) adds the neighbours' prior."""
        post = ll + self.log_weights[None, :]
        if group_rate is not None:
            g = np.log(np.asarray(group_rate, dtype=float))[:, None]
            post = post + np.where(np.isfinite(g), -0.5 * ((self.logs[None, :] - g) / self.group_sd) ** 2, 0.0)
        post -= post.max(axis=1, keepdims=True)
        p = np.exp(post)
        return p / p.sum(axis=1, keepdims=True)

    def posterior_rate(self, post):
        """The posterior mean rate of each page (a page that may change fast counts as fast)."""
        return post @ self.rates
