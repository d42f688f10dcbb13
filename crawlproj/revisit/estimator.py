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
