"""Revisit policies in a discrete-event simulation: freshness, age and detection at equal budget.

100,000 pages change as Poisson processes, lambda log-uniform between 1/hour and
1/year. Every policy gets the same fetch budget per day (``--budget``) for 365
simulated days, in hourly steps; a policy that asks for more than the budget gets
its most overdue pages first. Only the clock and the fetch are simulated: a fetch
at time t of a page last fetched at s finds it changed with probability
1 - exp(-lambda (t - s)). The ``tamura`` policy runs the project's own code
(:mod:`crawlproj.revisit.estimator` and :mod:`crawlproj.revisit.schedule`) on
every page at once.

Policies:

* ``uniform``: every page every N / budget days;
* ``heritrix``: Heritrix 1 WaitEvaluator (changed: /1.5, unchanged: x1.5, 1 h to 4 weeks);
* ``nutch``: Nutch AdaptiveFetchSchedule (changed: x(1 - 0.2), unchanged: x(1 + 0.4), 60 s to 365 d);
* ``stormcrawler``: StormCrawler AdaptiveScheduler (changed: 0.5 I + 0.5 I_min; unchanged:
  min(1.5 I, I_max); 1 h to 14 d);
* ``tamura``: eq. (3)'s estimate per page, allocated by the project's
  :func:`~crawlproj.revisit.schedule.optimal_intervals` (the freshness-optimal allocation,
  with estimated rates) under the budget;
* ``tamura_proportional``: eq. (3)'s estimate as the interval (factor 1), the paper's rule;
* ``oracle``: the true lambdas, allocated optimally (Cho & Garcia-Molina).

Reports mean freshness (the share of time a page's copy is up to date), mean age
(hours a copy has been out of date), the change-detection ratio (fetches that found a
new version / fetches), and eq. (3)'s median relative error of lambda after 5, 10 and
20 visits, against the truth and against the exact MLE, on a sample of pages. Plots
like the paper's Figs. 3-5 go to ``--plots`` (a directory). Prints one JSON line.
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

from crawlproj.progress import progress_bar  # noqa: E402
from crawlproj.revisit.estimator import mean_change_interval, mle_rate, smoothed_rate  # noqa: E402
from crawlproj.revisit.schedule import DAY, RevisitPolicy, budget_intervals, optimal_intervals  # noqa: E402

HOUR = 3600.0
YEAR = 365 * DAY


def fresh_integral(rate, span):
    """Expected time a copy synced at 0 stays fresh during [0, span]."""
    return -np.expm1(-rate * span) / rate


def age_integral(rate, span):
    """Expected integral of age over [0, span] after a sync at 0."""
    return span * span / 2 - span / rate + fresh_integral(rate, span) / rate


class Simulation:
    """One policy over the whole horizon. Subclasses decide intervals after each visit."""

    name = ""

    def __init__(self, rates: np.ndarray, budget_per_day: float, days: int, seed: int) -> None:
        self.rates = rates
        self.n = len(rates)
        self.budget_per_step = budget_per_day / 24
        self.days = days
        self.rng = np.random.default_rng(seed)
        self.last = np.zeros(self.n)  # every page was fetched at time 0
        self.visits = np.ones(self.n, dtype=np.int64)
        self.fresh = 0.0
        self.age = 0.0
        self.fetches = 0
        self.detected = 0
        self.base_interval = self.n / budget_per_day * DAY
        self.tick = None  # called with 1 each simulated hour (the progress bar)

    def first_due(self) -> np.ndarray:
        return self.rng.uniform(0, self.base_interval, self.n)  # the first crawl spread its visits

    def after_visit(self, idx: np.ndarray, now: float, span: np.ndarray, changed: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def run(self) -> dict:
        due = self.first_due()
        credit = 0.0
        for step in range(1, self.days * 24 + 1):
            if self.tick is not None:
                self.tick(1)
            now = step * HOUR
            credit += self.budget_per_step
            ready = np.flatnonzero(due <= now)
            take = int(credit)
            if take <= 0 or len(ready) == 0:
                credit = min(credit, self.budget_per_step)  # unused budget does not pile up
                continue
            if len(ready) > take:
                ready = ready[np.argpartition(due[ready], take - 1)[:take]]  # most overdue first
            credit -= len(ready)
            span = now - self.last[ready]
            rate = self.rates[ready]
            changed = self.rng.random(len(ready)) < -np.expm1(-rate * span)
            self.fresh += float(fresh_integral(rate, span).sum())
            self.age += float(age_integral(rate, span).sum())
            self.fetches += len(ready)
            self.detected += int(changed.sum())
            self.visits[ready] += 1
            interval = self.after_visit(ready, now, span, changed)
            self.last[ready] = now
            due[ready] = now + interval
        end = self.days * DAY
        span = end - self.last
        self.fresh += float(fresh_integral(self.rates, span).sum())
        self.age += float(age_integral(self.rates, span).sum())
        return {
            "freshness": self.fresh / (self.n * end),
            "age_hours": self.age / (self.n * end) / HOUR,
            "detection_ratio": self.detected / max(1, self.fetches),
            "fetches_per_day": self.fetches / self.days,
        }


class Uniform(Simulation):
    name = "uniform"

    def after_visit(self, idx, now, span, changed):
        return np.full(len(idx), self.base_interval)


class Multiplicative(Simulation):
    """Heritrix, Nutch and StormCrawler: the interval moves by a rule on changed / unchanged."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.interval = np.full(self.n, min(max(self.base_interval, self.lo), self.hi))

    def after_visit(self, idx, now, span, changed):
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

    def after_visit(self, idx, now, span, changed):
        self.U[idx] += np.where(changed, 0.0, span)
        self.m[idx] += changed
        self.tc_min[idx] = np.where(changed, np.minimum(self.tc_min[idx], span), self.tc_min[idx])
        T = np.full(len(idx), now)  # every page's first access was at 0
        estimate = mean_change_interval(T, self.U[idx], self.m[idx], self.tc_min[idx])
        if self.report_errors:
            self._record_errors(idx, span, changed, estimate)
        if self.allocate:
            self.rate[idx] = smoothed_rate(T, self.U[idx], self.m[idx], self.tc_min[idx])
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
        else:  # the paper's rule: eq. (3) times the factor, back-off and shrink where singular
            last = self.interval[idx]
            new = np.array([
                self.policy.clamp(self.policy.factor * e, self.py_rng) if not math.isnan(e) else
                self.policy.singular(now, float(self.U[i]), int(self.m[i]),
                                     None if math.isnan(li) else float(li), self.py_rng)[0]
                for e, i, li in zip(estimate.tolist(), idx.tolist(), last.tolist())])
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


class Oracle(Simulation):
    name = "oracle"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.intervals, _ = optimal_intervals(self.rates, self.budget_per_step * 24 / DAY, None)

    def first_due(self) -> np.ndarray:
        return self.rng.uniform(0, 1, self.n) * np.minimum(self.intervals, 10 * YEAR)

    def after_visit(self, idx, now, span, changed):
        return self.intervals[idx]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--budget", type=float, default=10_000, help="fetches per simulated day")
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--plots", default="data/bench/revisit_sim", help="directory for the PNG figures ('' : none)")
    args = parser.parse_args()
    started = time.monotonic()
    rng = np.random.default_rng(args.seed)
    rates = np.exp(rng.uniform(math.log(1 / YEAR), math.log(1 / HOUR), args.pages))
    results, tamura = {}, None
    policies = (Uniform, Heritrix, Nutch, StormCrawler, Tamura, TamuraProportional, Oracle)
    with progress_bar(len(policies) * args.days * 24, "simulating", "hour") as bar:
        for cls in policies:
            sim = cls(rates, args.budget, args.days, args.seed + 1)
            sim.tick = bar.update
            results[cls.name] = sim.run()
            if cls is Tamura:
                tamura = sim
    assert tamura is not None
    errors = tamura.error_report()
    heuristics = ("uniform", "heritrix", "nutch", "stormcrawler")
    figures = plots(Path(args.plots), tamura, 50, args.seed) if args.plots else []
    out = {
        "bench": "revisit_sim", "pages": args.pages, "budget_per_day": args.budget, "days": args.days,
        "freshness": {k: round(v["freshness"], 4) for k, v in results.items()},
        "age_hours": {k: round(v["age_hours"], 1) for k, v in results.items()},
        "detection_ratio": {k: round(v["detection_ratio"], 4) for k, v in results.items()},
        "fetches_per_day": {k: round(v["fetches_per_day"]) for k, v in results.items()},
        "tamura_vs_best_heuristic": round(results["tamura"]["freshness"]
                                          / max(results[h]["freshness"] for h in heuristics), 3),
        "tamura_vs_oracle": round(results["tamura"]["freshness"] / results["oracle"]["freshness"], 3),
        "median_rel_error_after_5": errors[5]["eq3_vs_truth"],
        "median_rel_error_after_10": errors[10]["eq3_vs_truth"],
        "median_rel_error_after_20": errors[20]["eq3_vs_truth"],
        "estimator_errors": errors,
        "plots": figures,
        "seconds": round(time.monotonic() - started, 1),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
