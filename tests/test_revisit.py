"""The incremental crawler's pure logic: eq. (3), the exact MLE, revisit intervals, the server load index."""

import dataclasses
import math
import random

import numpy as np
import pytest

from crawlproj.revisit.estimator import PageHistory, mean_change_interval, mle_rate, smoothed_rate
from crawlproj.revisit.schedule import CAP, DAY, RevisitPolicy, ServerLoad, optimal_intervals


def test_eq3_by_hand():
    # T = 10, U = 4, m = 3, tc_min = 1: tc_avg = 2, t_c = sqrt(2), 1/lambda = sqrt(2) / log(2.5)
    assert float(mean_change_interval(10, 4, 3, 1)) == pytest.approx(math.sqrt(2) / math.log(2.5))
    h = PageHistory(0, 0)
    for now, changed in ((1, True), (3, False), (5, True), (7, False), (10, True)):
        h = h.visit(now, changed)
    assert (h.elapsed, h.unchanged, h.changes, h.tc_min) == (10, 4, 3, 1)
    assert h.mean_change_interval() == pytest.approx(math.sqrt(2) / math.log(2.5))


@pytest.mark.parametrize("T, U, m, why", [(0, 0, 0, "first access"), (5, 5, 0, "never changed"),
                                          (5, 0, 3, "always changed"), (5, 2, 0, "no change counted")])
def test_eq3_singular_cases_have_no_estimate(T, U, m, why):
    assert math.isnan(float(mean_change_interval(T, U, m, 1.0))), why
    history = PageHistory(0, T, unchanged=U, changes=m, tc_min=1.0 if m else math.inf)
    assert history.mean_change_interval() is None


def test_eq3_equals_the_mle_on_regular_intervals():
    # n intervals of length I, k of them changed: the MLE is log(n / (n - k)) / I, and so is eq. (3).
    n, k, interval = 20, 6, 3600.0
    mle = mle_rate([interval] * k, [interval] * (n - k))
    assert mle == pytest.approx(math.log(n / (n - k)) / interval, rel=1e-9)
    eq3 = 1 / float(mean_change_interval(n * interval, (n - k) * interval, k, interval))
    assert eq3 == pytest.approx(mle, rel=1e-9)


def test_mle_singular_cases():
    assert mle_rate([], [10.0, 20.0]) is None  # never changed: lambda 0
    assert mle_rate([10.0, 20.0], []) is None  # always changed: unbounded
    assert mle_rate([1e-9], [1e9]) > 0  # extreme but solvable: no overflow, no divergence
    assert mle_rate([1e9, 1e9], [1e-3]) > 0


def test_estimators_on_simulated_poisson_data():
    rng = np.random.default_rng(3)
    for rate in (1 / 3600, 1 / 86400, 1 / (30 * 86400)):
        # A crawler's revisits: a scheduled interval with jitter, here 0.7-1.3 times the change interval.
        spans = rng.uniform(0.7, 1.3, 2000) / rate
        changed = rng.random(2000) < -np.expm1(-rate * spans)
        mle = mle_rate(spans[changed].tolist(), spans[~changed].tolist())
        assert mle == pytest.approx(rate, rel=0.1)
        h = PageHistory(0, 0)
        for span, c in zip(spans, changed):
            h = h.visit(h.last_access + float(span), bool(c))
        assert 1 / h.mean_change_interval() == pytest.approx(mle, rel=0.3)  # the O(1) approximation
    # With widely irregular intervals t_c min runs to the shortest one and eq. (3) overestimates
    # lambda (here about 3x after 2000 visits): why bench/revisit_sim.py reports its error.
    spans = rng.uniform(0.2, 3.0, 2000) * 3600
    changed = rng.random(2000) < -np.expm1(-spans / 3600)
    h = PageHistory(0, 0)
    for span, c in zip(spans, changed):
        h = h.visit(h.last_access + float(span), bool(c))
    assert 1.5 < 3600 / h.mean_change_interval() < 5


def test_smoothed_rate_covers_the_singular_cases():
    r = smoothed_rate([10.0, 10.0, 10.0, 0.0], [4.0, 0.0, 10.0, 0.0], [3, 2, 0, 0], [1.0, 5.0, math.inf, math.inf])
    assert r[0] == pytest.approx(1 / float(mean_change_interval(10, 4, 3, 1)))
    assert r[1] == pytest.approx(math.log(3) / 5.0)  # always changed: log(m + 1) / t_c
    assert r[2] == pytest.approx(math.log(2) / 10.0)  # never changed: log 2 / T
    assert math.isnan(r[3])  # no revisit yet


def test_policy_rules_and_the_400_day_rule():
    policy = RevisitPolicy(min_interval=3600, first_interval=(DAY, 2 * DAY), backoff=2.0, shrink=0.5, factor=0.5)
    rng = random.Random(1)
    first = PageHistory(0, 0)
    seconds, rule = policy.next_interval(first, None, rng)
    assert rule == "first" and DAY <= seconds <= 2 * DAY
    never = PageHistory(0, 10 * DAY, unchanged=10 * DAY)
    assert policy.next_interval(never, 3 * DAY, rng) == (6 * DAY, "backoff")
    always = PageHistory(0, 10 * DAY, changes=4, tc_min=2 * DAY)
    assert policy.next_interval(always, 4 * DAY, rng) == (2 * DAY, "shrink")
    assert policy.next_interval(always, 1000, rng) == (3600, "shrink")  # clamped to the minimum
    estimated = PageHistory(0, 10 * DAY, unchanged=4 * DAY, changes=3, tc_min=DAY)
    seconds, rule = policy.next_interval(estimated, DAY, rng)
    assert rule == "estimate" and seconds == pytest.approx(0.5 * estimated.mean_change_interval())
    # Over 400 days becomes uniform in 300-400 days; never over 400.
    long_ones = [policy.clamp(x, rng) for x in (401 * DAY, 5000 * DAY, math.inf)]
    assert all(300 * DAY <= x <= 400 * DAY for x in long_ones) and len(set(long_ones)) == 3
    assert policy.clamp(399 * DAY, rng) == 399 * DAY
    arr = policy.clamp_array(np.array([10.0, 5 * DAY, 900 * DAY]), np.random.default_rng(1))
    assert arr[0] == 3600 and arr[1] == 5 * DAY and 300 * DAY <= arr[2] <= CAP
    with pytest.raises(ValueError):
        RevisitPolicy(max_interval=500 * DAY)


def test_server_load_index_is_incremental():
    load = ServerLoad()
    load.set("a", 100.0)
    load.set("b", 50.0)
    assert load.load == pytest.approx(1 / 100 + 1 / 50)
    load.set("a", 25.0)  # an interval changes: only its own term moves
    assert load.load == pytest.approx(1 / 25 + 1 / 50)
    load.remove("b")
    assert load.load == pytest.approx(1 / 25) and load.required_interval == pytest.approx(25)
    rng = random.Random(2)
    for i in range(1000):
        load.set(f"p{i}", rng.uniform(10, 1000))
    for i in range(0, 1000, 3):
        load.set(f"p{i}", rng.uniform(10, 1000))
    assert load.load == pytest.approx(sum(1 / t for t in load.intervals.values()), rel=1e-9)


def test_overload_is_relieved_by_stretching_or_dropping():
    def server():
        load = ServerLoad()
        for url, interval in {"fast": 2.0, "mid": 4.0, "slow": 8.0}.items():
            load.set(url, interval)
        return load  # L = 0.875/s: it needs a request every 1.14 s

    load = server()
    assert load.overloaded(2.0) and not load.overloaded(1.0)
    changed, dropped = load.relieve(2.0, "stretch")
    assert not dropped and changed["fast"] == pytest.approx(2.0 * 2.0 * 0.875)
    assert load.required_interval == pytest.approx(2.0) and not load.overloaded(2.0)
    load = server()
    changed, dropped = load.relieve(2.0, "drop")
    assert dropped == ["fast"] and not changed and not load.overloaded(2.0)  # the costliest page goes first
    load = server()
    _, dropped = load.relieve(2.0, "drop", value={"fast": 10.0, "mid": 1.0, "slow": 1.0})
    assert dropped == ["mid", "slow"]  # the valuable page stays; the others go until 1/L >= 2 s
    assert server().relieve(1.0) == ({}, [])


def freshness(rates, intervals):
    f = 1 / intervals  # 0 for pages never revisited: they count as never fresh
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.mean(np.where(f > 0, f / rates * -np.expm1(-rates / f), 0.0)))


def test_optimal_allocation_spends_the_budget_and_beats_uniform():
    rng = np.random.default_rng(5)
    rates = np.exp(rng.uniform(math.log(1 / (365 * DAY)), math.log(1 / 3600), 5000))
    budget = 500 / DAY  # 500 fetches a day over 5000 pages
    intervals, mu = optimal_intervals(rates, budget)
    assert float((1 / intervals).sum()) == pytest.approx(budget, rel=1e-3)
    assert np.isinf(intervals[rates > 1 / mu]).all()  # changing faster than worth following: left alone
    uniform = np.full(5000, 5000 / budget)
    assert freshness(rates, intervals) > 1.05 * freshness(rates, uniform)
    # With a policy, every page keeps a finite interval inside its range.
    clamped, _ = optimal_intervals(rates, budget, RevisitPolicy())
    assert np.isfinite(clamped).all() and clamped.min() >= 3600 and clamped.max() <= CAP


# -- the budget schedule, per-URL state and the long-term queue ----------------------------
from crawlproj.revisit.queue import RevisitQueue  # noqa: E402
from crawlproj.revisit.schedule import budget_intervals  # noqa: E402
from crawlproj.revisit.state import CrawlClock, Planner  # noqa: E402
from sandbox.changes import PageChanges  # noqa: E402


def test_budget_intervals_wait_for_a_likely_change():
    policy = RevisitPolicy(min_interval=60, min_change=0.1)
    rng = np.random.default_rng(1)
    rates = np.array([1 / 3600, 1 / DAY, 1 / (30 * DAY)])
    ample = budget_intervals(rates, 1e-12, policy, rng)  # an ample budget: mu near 0
    # no sooner than a 10% chance of a change: 1 - exp(-rate x interval) = 0.1
    assert np.allclose(1 - np.exp(-rates * ample), 0.1)
    tight = budget_intervals(rates, 1e5, policy, rng)  # a short budget: the allocation decides
    assert tight[0] >= 300 * DAY  # changes too fast to keep fresh: left for the longest interval
    assert (tight >= ample).all()


def test_planner_first_visit_revisit_and_failure():
    planner = Planner(RevisitPolicy(min_interval=60, first_interval=(100, 200)), "estimate", random.Random(3))
    state = planner.first("http://a/", "a", 1000.0, depth=2, content_hash="x", etag='"1"')
    assert state.rule == "first" and 1100 <= state.next_due <= 1200 and state.depth == 2
    assert state.conditional_headers == {"If-None-Match": '"1"'}
    first_interval = state.interval
    state = planner.visit(state, 1150.0, changed=False, not_modified=True)
    assert state.rule == "backoff" and state.interval == 2 * first_interval
    assert state.next_due == 1150.0 + state.interval
    assert state.not_modified == 1 and state.visits == 2 and state.history.unchanged == 150.0
    state = planner.visit(state, state.next_due, changed=True, content_hash="y")
    assert state.rule == "estimate" and state.history.changes == 1 and state.content_hash == "y"
    failed = planner.failed(state, 5000.0)
    assert failed.rule == "retry" and failed.errors == 1 and failed.history == state.history
    assert planner.failed(failed, 5000.0).next_due - 5000.0 == pytest.approx(2 * (failed.next_due - 5000.0))


def test_planner_budget_schedule_uses_mu_once_planned():
    planner = Planner(RevisitPolicy(min_interval=60, first_interval=(100, 100)), "budget", random.Random(1))
    state = planner.visit(planner.first("u", "h", 0.0), 100.0, changed=True)
    assert state.rule == "shrink" and state.rate is not None  # no mu yet: the paper's rules
    planner.replan([state.rate] * 10, budget=10 / 3600)
    assert planner.mu is not None
    assert planner.visit(state, 200.0, changed=False).rule == "budget"
    with pytest.raises(ValueError):
        Planner(schedule="sometimes")


def test_revisit_queue_round_trip_due_order_and_changes(tmp_path):
    planner = Planner(RevisitPolicy(min_interval=60, first_interval=(100, 100)), "estimate", random.Random(1))
    queue = RevisitQueue(str(tmp_path / "r.db"))
    for i, host in enumerate(["a", "a", "b"]):
        queue.put(planner.first(f"http://{host}/{i}", host, float(i)))
    assert queue.get("http://a/0").next_due == 100.0  # uncommitted writes are read back
    queue.commit()
    seq = queue.committed_seq()
    assert [u for _, u in queue.due(float("-inf"), 101.0, 10)] == ["http://a/0", "http://a/1"]
    assert dict(queue.host_loads()) == pytest.approx({"a": 2 / 100, "b": 1 / 100})
    moved = planner.visit(queue.get("http://b/2"), 150.0, changed=True)
    queue.put(moved)
    queue.delete("http://a/1")
    queue.commit()
    assert queue.changed_since(seq, 1e9) == [(moved.next_due, "http://b/2")]
    assert queue.get("http://a/1") is None and queue.count() == 2
    queue.close()
    again = RevisitQueue(str(tmp_path / "r.db"))  # reopened: the state survives whole
    restored = again.get("http://b/2")
    assert restored == moved and math.isinf(again.get("http://a/0").history.tc_min)
    assert again.seq == seq + 1


def test_a_sitemap_lastmod_after_the_last_visit_makes_the_page_due_now(tmp_path):
    planner = Planner(RevisitPolicy(min_interval=60, first_interval=(1000, 1000)), "estimate", random.Random(1))
    scale = 10.0  # the crawl clock runs ten times real time
    state = planner.first("http://a/1", "a", 5000.0, sitemap_lastmod=400.0)  # visited at real 500
    assert state.sitemap_lastmod == 400.0 and state.next_due == 6000.0
    assert planner.sitemap_lastmod(state, 400.0, 5100.0, scale) is None  # nothing new
    older = planner.sitemap_lastmod(state, 450.0, 5100.0, scale)  # newer lastmod, still before the visit
    assert older.sitemap_lastmod == 450.0 and older.next_due == 6000.0 and older.rule == state.rule
    changed = planner.sitemap_lastmod(older, 505.0, 5100.0, scale)  # changed after the visit
    assert changed.next_due == 5100.0 and changed.rule == "lastmod"
    future = planner.sitemap_lastmod(state, 10**12, 5200.0, scale)  # a wrong clock counts as now
    assert future.sitemap_lastmod == 520.0 and future.rule == "lastmod"
    queue = RevisitQueue(str(tmp_path / "r.db"))
    queue.put(changed)
    queue.commit()
    assert RevisitQueue(str(tmp_path / "r.db")).get("http://a/1").sitemap_lastmod == 505.0


def test_a_revisit_queue_from_before_sitemap_lastmod_is_upgraded(tmp_path):
    import sqlite3

    from crawlproj.revisit.queue import ADDED, COLUMNS

    path = str(tmp_path / "old.db")
    first_version = [c for c in COLUMNS if c not in ADDED]
    with sqlite3.connect(path) as conn:  # the table as the first version made it
        conn.execute(f"CREATE TABLE revisit ({', '.join(first_version)}, seq INTEGER NOT NULL, PRIMARY KEY (url))")
        conn.execute(f"INSERT INTO revisit VALUES ({', '.join('?' * (len(first_version) + 1))})",
                     ("http://a/0", "a", 0, 0.0, 0.0, 0.0, 0, None, 100.0, 100.0, "first", None, None, None, None,
                      1, 0, 0, 1))
    queue = RevisitQueue(path)
    old = queue.get("http://a/0")
    assert (old.sitemap_lastmod, old.dated_changes, old.dated_exposure, old.source, old.probes) == \
        (None, 0.0, 0.0, "", 0)
    planner = Planner(RevisitPolicy(min_interval=60, first_interval=(100, 100)), "estimate", random.Random(1))
    queue.put(planner.first("http://a/1", "a", 0.0, modified_at=-500.0))
    queue.commit()
    assert queue.get("http://a/1").dated_exposure == 500.0 and queue.get("http://a/1").source == "dates"


def test_crawl_clock_scales_real_time():
    clock = CrawlClock(3600, source=lambda: 10.0)
    assert clock.now() == 36000.0 and clock.to_real(7200) == 2.0
    with pytest.raises(ValueError):
        CrawlClock(0)


def test_sandbox_pages_change_as_poisson_processes():
    changes = PageChanges(seed=1, change_min=60, change_max=6000, time_scale=10, origin=0.0)
    means = [changes.mean_interval(0, k) for k in range(50)]
    assert 60 <= min(means) and max(means) <= 6000 and max(means) / min(means) > 10
    fast = min(range(50), key=means.__getitem__)
    versions = [changes.version(0, fast, t)[0] for t in range(0, 20000, 100)]
    assert versions == sorted(versions)  # versions only grow
    # 20000 real s x 10 = 200000 crawl-clock s: about that over the mean changes
    assert versions[-1] == pytest.approx(200_000 / means[fast], rel=0.25)
    version, at = changes.version(0, fast, 20000.0)
    assert at <= 20000.0 and PageChanges(1, 60, 6000, 10, 0.0).version(0, fast, 20000.0) == (version, at)


# -- the revisit pipeline on a crawler that never crawls ------------------------------------
import hashlib  # noqa: E402

from scrapy.utils.test import get_crawler  # noqa: E402

import settings as base_settings  # noqa: E402 - the project: its defaults and profiles
from crawlproj.items import FetchError, PageItem, Skipped  # noqa: E402
from crawlproj.revisit.pipeline import RevisitPipeline  # noqa: E402


def _pipeline(tmp_path, **values):
    defaults = {k: getattr(base_settings, k) for k in dir(base_settings) if k.isupper()}
    crawler = get_crawler(settings_dict={**defaults, "PROFILE": "sandbox", "RENDER_MODE": "never",
                                         "REVISIT_DB": str(tmp_path / "revisit.db"), **values})
    crawler.stats.open_spider()
    clock = [1000.0]
    pipeline = RevisitPipeline.from_crawler(crawler)
    pipeline.clock.source = lambda: clock[0]
    return pipeline, crawler.stats, clock


def _page(url, text="same article text " * 20, noise="", status=200, **kw):
    body = (f"<html><body><article><h1>Title</h1><p>{text}</p></article>"
            f"<footer>{noise}</footer></body></html>").encode()
    fields = dict(url=url, final_url=url, host=url.split("/")[2], status=status,
                  content_type="text/html; charset=utf-8", charset="utf-8", fetched_at=0.0, fetch_duration=0.01,
                  bytes=len(body), content_hash=hashlib.sha256(body).hexdigest(), title="Title", depth=kw.pop("depth", 0),
                  body=body, response_headers=kw.pop("headers", []))
    return PageItem(**{**fields, **kw})


def test_pipeline_detects_changes_in_the_main_text_only(tmp_path):
    pipeline, stats, clock = _pipeline(tmp_path, REVISIT_SCHEDULE="estimate")
    url = "http://a.test/p"
    pipeline.process_item(_page(url, noise="served at 1", headers=[("ETag", '"v1"')]))
    first = pipeline.queue.get(url)
    assert first.rule == "first" and first.etag == '"v1"' and first.visits == 1
    clock[0] += 10_000
    pipeline.process_item(_page(url, noise="served at 2"))  # only the footer differs
    assert stats.get_value("revisit/unchanged") == 1 and pipeline.queue.get(url).history.changes == 0
    clock[0] += 10_000
    pipeline.process_item(_page(url, text="a new article " * 20))
    state = pipeline.queue.get(url)
    assert stats.get_value("revisit/changed") == 1 and state.history.changes == 1 and state.visits == 3
    clock[0] += 10_000
    pipeline.process_item(_page(url, status=304, not_modified=True, body=b""))
    state = pipeline.queue.get(url)
    assert state.not_modified == 1 and state.history.unchanged == 20_000 and state.etag == '"v1"'
    pipeline.commit()
    assert pipeline.queue.committed_seq() >= 1


def test_pipeline_removes_gone_pages_and_retries_failures(tmp_path):
    pipeline, stats, clock = _pipeline(tmp_path)
    for path in ("gone", "fails", "robots", "new-error"):
        pipeline.process_item(_page(f"http://a.test/{path}"))
    pipeline.process_item(_page("http://a.test/gone", status=404, body=b"not found"))
    pipeline.process_item(FetchError("http://a.test/fails", "a.test", "timeout", "", 0, 0.0))
    pipeline.process_item(Skipped("http://a.test/robots", "robots"))
    pipeline.process_item(FetchError("http://a.test/unknown", "a.test", "timeout", "", 0, 0.0))  # never tracked
    assert pipeline.queue.get("http://a.test/gone") is None and pipeline.queue.get("http://a.test/robots") is None
    failed = pipeline.queue.get("http://a.test/fails")
    assert failed.rule == "retry" and failed.errors == 1 and failed.visits == 1
    assert pipeline.queue.get("http://a.test/unknown") is None
    assert stats.get_value("revisit/removed/gone") == 1 and stats.get_value("revisit/removed/robots") == 1
    # the load index followed the removals incrementally
    assert pipeline.loads["a.test"] == pytest.approx(sum(1 / s.interval for s in pipeline.queue.host_states("a.test")))


def test_a_replan_samples_and_fits_the_local_queue_off_the_reactor_thread(tmp_path, monkeypatch, threaded_replans):
    """The replan's sample of the queue and its fit took 0.1-0.2 s on the reactor every minute at
    5,000 pages (more with every page), holding every host's next request: they run in a thread,
    through a connection of the queue's own, and the planner in use is swapped, never refitted
    in place, when they are done."""
    import threading

    pipeline, stats, clock = _pipeline(tmp_path, REVISIT_BUDGET=1000.0)
    for visit in range(2):
        for i in range(60):
            pipeline.process_item(_page(f"http://h{i % 5}.test/{i}", text=f"page {i} visit {visit} " * 20))
        clock[0] += 3600
    pipeline.queue.commit()
    threads = []
    sample, fitted = pipeline.queue.state_sample, pipeline.planner.fitted_priors
    in_use = (pipeline.planner.groups, pipeline.planner.grid)

    def fit_spy(states):
        threads.append(threading.current_thread())
        out = fitted(states)
        assert (pipeline.planner.groups, pipeline.planner.grid) == in_use  # untouched while it fits
        return out

    monkeypatch.setattr(pipeline.queue, "state_sample", lambda n: threads.append(threading.current_thread()) or sample(n))
    monkeypatch.setattr(pipeline.planner, "fitted_priors", fit_spy)
    pipeline.replan()
    assert len(threads) == 2 and threading.main_thread() not in threads
    assert pipeline.queue._reader is not None  # the thread's own connection, not the writer's
    assert pipeline.planner.groups is not in_use[0] and pipeline.planner.grid is not in_use[1]
    assert pipeline.planner.grid_fitted and pipeline.planner.groups.prior("h1.test") is not None
    assert stats.get_value("revisit/mu") is not None and stats.get_value("revisit/tracked") == 60
    assert pipeline._drawing is None
    pipeline.close_spider()


def test_pipeline_relieves_an_overloaded_server_by_dropping_its_deepest_pages(tmp_path):
    pipeline, stats, clock = _pipeline(tmp_path, REVISIT_OVERLOAD="drop", REVISIT_SCHEDULE="estimate",
                                       REVISIT_MIN_INTERVAL=60, REVISIT_FIRST_INTERVAL=[600, 600], MIN_INTERVAL=100)
    # 600 s first intervals: the seventh page asks for a fetch every 86 s, under the 100 s polite interval.
    for k in range(10):
        pipeline.process_item(_page(f"http://a.test/{k}", depth=k))
    assert stats.get_value("revisit/overloads") >= 1
    kept = {s.url for s in pipeline.queue.host_states("a.test")}
    assert "http://a.test/0" in kept and "http://a.test/9" not in kept  # the deepest go first
    assert 1 / pipeline.loads["a.test"] >= 100.0  # feasible again
    assert stats.get_value("revisit/overload_dropped") == 10 - len(kept)


def test_stretching_an_overloaded_server_starts_from_the_plans_and_does_not_compound(tmp_path):
    """Each relief stretches the intervals the estimates asked for, not the last stretched ones:
    a page revisited often (its new plan overloads the server again each time) must not push
    the pages waiting beside it ever further away."""
    pipeline, stats, clock = _pipeline(tmp_path, REVISIT_OVERLOAD="stretch", REVISIT_SCHEDULE="estimate",
                                       REVISIT_MIN_INTERVAL=60, REVISIT_FIRST_INTERVAL=[600, 600], MIN_INTERVAL=100)
    for k in range(10):
        pipeline.process_item(_page(f"http://a.test/{k}"))
    waiting = pipeline.queue.get("http://a.test/9")
    assert waiting.rule == "stretched" and waiting.plan == 600 and waiting.interval > 600
    for i in range(300):  # page 0 changes at every revisit: each new plan overloads the server again
        clock[0] += 60
        pipeline.process_item(_page("http://a.test/0", text=f"article {i} " * 20))
    assert stats.get_value("revisit/overloads") > 100
    later = pipeline.queue.get("http://a.test/9")
    assert later.plan == 600 and later.interval < 2 * waiting.interval, (waiting.interval, later.interval)
    assert 1 / pipeline.loads["a.test"] >= 100.0  # still feasible
    # the plan survives the queue's storage
    pipeline.commit()
    assert RevisitQueue(str(tmp_path / "revisit.db")).get("http://a.test/9").plan == 600


from crawlproj.revisit.estimator import DateCheck, GroupPrior, RateGrid, dated_observation, dated_rate  # noqa: E402


def test_dated_observations_by_hand():
    # First look at t=100: last changed at 40 -> one change, 60 s known without one.
    m, S = dated_observation(0, 0, None, 100.0, 40.0)
    assert (m, S) == (1, 60)
    m, S = dated_observation(m, S, 100.0, 200.0, 40.0)  # same date: the whole span without change
    assert (m, S) == (1, 160)
    m, S = dated_observation(m, S, 200.0, 300.0, 250.0)  # changed at 250: only 50 s count
    assert (m, S) == (2, 210)
    assert dated_observation(m, S, 300.0, 400.0, float("nan")) == (2, 210)  # no date: nothing learnt
    assert dated_observation(m, S, 300.0, 400.0, 500.0) == (2, 210)  # a date after the observation
    assert dated_rate(2, 210) == pytest.approx(2 / 210)
    assert dated_rate(0, 100, prior_changes=1, prior_exposure=100) == pytest.approx(1 / 200)
    assert math.isnan(float(dated_rate(0, 0)))


def test_dates_estimate_rates_far_better_than_yes_no_visits():
    """Ten visits at about the mean change interval: the dated MLE's median error is near the
    ~0.2 that ten exponential draws allow; eq. (3) with yes/no visits is much worse."""
    rng = np.random.default_rng(3)
    rate = 1 / 86400
    dated_err, binary_err = [], []
    for _ in range(600):
        t, last, upcoming = 0.0, -rng.exponential(1 / rate), rng.exponential(1 / rate)
        m = S = 0.0
        seen, U, changes, tc_min = None, 0.0, 0, math.inf
        for _ in range(10):
            span = rng.uniform(0.5, 1.5) / rate
            t += span
            changed = upcoming <= t
            while upcoming <= t:
                last, upcoming = upcoming, upcoming + rng.exponential(1 / rate)
            m, S = dated_observation(m, S, seen, t, last)
            seen = t
            U, changes, tc_min = (U, changes + 1, min(tc_min, span)) if changed else (U + span, changes, tc_min)
        dated_err.append(abs(float(dated_rate(m, S)) - rate) / rate)
        binary_err.append(abs(float(smoothed_rate(t, U, changes, tc_min)) - rate) / rate)
    assert np.median(dated_err) < 0.3 < np.median(binary_err)


def test_date_check_refuses_future_dates_and_hosts_that_stamp_the_request_time():
    check = DateCheck(tolerance=2.0, min_dates=5, share=0.8)
    assert check.observe("a", 1000.0, 500.0) == 500.0
    assert check.observe("a", 1000.0, 5000.0) is None  # the future
    assert check.observe("a", 1000.0, None) is None
    for t in range(5):  # b stamps every response with the time it was asked for
        assert check.observe("b", 2000.0 + t, 2000.0 + t) is None
    assert not check.trusted("b") and check.trusted("a")
    assert check.observe("b", 3000.0, 100.0) is None  # even an old date is not believed now


def test_group_prior_pools_in_logs_and_falls_back_to_wider_groups():
    prior = GroupPrior(strength=1.0, min_pages=3)
    prior.fit({"a/docs": np.array([1e-3, 1e-5, 1e-4]), "a": np.array([1e-3, 1e-5, 1e-4, 1e-6]),
               "b/x": np.array([1e-2])})
    assert prior.prior("a/docs", "a") == pytest.approx(1e-4)  # the geometric mean
    assert prior.prior("b/x", "b") == pytest.approx(prior.overall)  # too few pages: the crawl's
    assert prior.pseudo(1e-4) == (1.0, 1e4) and prior.pseudo(None) == (0.0, 0.0)


def test_rate_grid_learns_the_population_and_judges_always_changed_pages_fast():
    rng = np.random.default_rng(5)
    true = np.exp(rng.uniform(math.log(1 / (365 * DAY)), math.log(1 / 3600), 3000))
    span = 10 * DAY  # ten visits ten days apart: every fast page always changed
    changed = rng.random((3000, 10)) < -np.expm1(-true[:, None] * span)
    m = changed.sum(axis=1)
    T, U = np.full(3000, 10 * span), (10 - m) * span
    grid = RateGrid()
    grid.fit(grid.loglik(T, U, m))
    posterior = grid.posterior_rate(grid.posterior(grid.loglik(T, U, m)))
    always = m == 10
    # Pages that changed at every visit are judged as fast as such pages are, on average.
    assert np.median(posterior[always]) > 5 * np.median(smoothed_rate(T[always], U[always], m[always], span))
    slow = m <= 5
    assert np.median(np.abs(posterior[slow] - true[slow]) / true[slow]) < 0.8


def test_rate_grid_spreads_the_mass_above_the_threshold_flat_in_log_rate():
    rng = np.random.default_rng(3)
    # Pages near one rate (two days), known from many dates, and pages that changed at every
    # one of ten visits ten days apart: the maximum-likelihood mixture heaps the second kind
    # on the rates the first kind supports.
    n = 400
    true = np.concatenate([np.full(n, 1 / (2 * DAY)), np.exp(rng.uniform(math.log(1 / DAY), math.log(1 / 3600), n))])
    md = np.concatenate([rng.poisson(60, n), np.zeros(n)])
    S = np.concatenate([md[:n] / true[:n], np.zeros(n)])
    T, U, m = np.full(2 * n, 100 * DAY), np.zeros(2 * n), np.full(2 * n, 10.0)
    heaped, spread = RateGrid(high=1 / 3600), RateGrid(high=1 / 3600)
    for _ in range(20):  # refitted as the crawl goes on
        heaped.fit(heaped.loglik(T, U, m, md, S))
        spread.fit(spread.loglik(T, U, m, md, S), censored_above=1 / (3 * DAY))
    w_heaped, w_spread = np.exp(heaped.log_weights), np.exp(spread.log_weights)
    above = spread.rates >= 1 / (3 * DAY)
    assert np.allclose(w_spread[above], w_spread[above][0])  # flat in log rate
    assert w_spread[above].sum() == pytest.approx(w_heaped[above].sum(), rel=0.05)  # no mass lost
    assert w_heaped[above].max() > 5 * w_spread[above].max()  # without it: a heap
    censored = slice(n, 2 * n)
    rate_heaped = heaped.posterior_rate(heaped.posterior(heaped.loglik(T, U, m, md, S)))[censored]
    rate_spread = spread.posterior_rate(spread.posterior(spread.loglik(T, U, m, md, S)))[censored]
    # Pages that always changed are no longer taken for the heap's rate: they are judged as
    # fast as pages above the threshold may be, and left for long intervals.
    assert np.median(rate_heaped) < 1 / DAY < np.median(rate_spread)


def test_probe_intervals_come_before_a_page_is_left_alone_on_yes_no_visits():
    from crawlproj.revisit.schedule import probe_intervals

    policy = RevisitPolicy(min_interval=3600, probes=2)
    mu = 2 * DAY  # pages changing faster than every two days are not worth the budget
    fast, kept = 1 / DAY, 1 / (5 * DAY)

    def probe(rate=fast, unchanged=0.0, changes=3, dated=0.0, probes=0, mu=mu):
        return float(probe_intervals(rate, mu, unchanged, changes, dated, probes, policy))

    assert probe() == DAY  # always changed, about to be left alone: probed at mu / 2
    assert probe(probes=1) == DAY and math.isnan(probe(probes=2))  # twice at most
    assert math.isnan(probe(rate=kept))  # worth revisiting: the allocation decides
    assert math.isnan(probe(unchanged=DAY))  # once found unchanged, the visits tell the rate
    assert math.isnan(probe(dated=DAY))  # dates tell the rate
    assert math.isnan(probe(changes=0))  # no revisit yet
    assert probe(mu=600.0, rate=1.0) == 3600  # never sooner than the policy's minimum
    got = probe_intervals([fast, kept], mu, [0.0, 0.0], [1, 1], [0.0, 0.0], [0, 0], policy)
    assert got[0] == DAY and math.isnan(got[1])  # arrays alike (the simulation)
    with pytest.raises(ValueError):
        RevisitPolicy(probes=-1)


def test_planner_probes_a_page_that_always_changed_before_leaving_it(tmp_path):
    planner = Planner(RevisitPolicy(min_interval=60, first_interval=(100, 100), probes=2), "budget",
                      random.Random(1))
    planner.mu = 2 * DAY
    population = []  # the crawl so far: pages seen changed at every visit ten days apart, and slow ones
    for i in range(100):
        st = planner.first(f"http://b/{i}", "b", 0.0)
        history = st.history
        for k in range(1, 6):
            history = history.visit(k * 10 * DAY, changed=i % 2 == 0 or k == 5)
        population.append(dataclasses.replace(st, history=history))
    planner.fit_priors(population)
    assert planner.grid_fitted
    state = planner.first("http://a/0", "a", 0.0)
    rules, intervals, now = [], [], 0.0
    for _ in range(8):  # changed at every visit, ten days apart (or at the probe's interval)
        now += state.interval if rules and rules[-1] == "probe" else 10 * DAY
        state = planner.visit(state, now, changed=True)
        rules.append(state.rule)
        intervals.append(state.interval)
    first = rules.index("probe")
    assert rules[first:first + 3] == ["probe", "probe", "budget"] and rules.count("probe") == 2
    assert intervals[first] == intervals[first + 1] == planner.mu / 2 and state.probes == 2
    assert state.rate * planner.mu >= 1 and state.interval > 100 * DAY  # then judged too fast: left alone
    queue = RevisitQueue(str(tmp_path / "r.db"))
    queue.put(state)
    queue.commit()
    assert RevisitQueue(str(tmp_path / "r.db")).get("http://a/0").probes == 2
    # A probe that finds the page unchanged puts it back in the allocation.
    other = planner.first("http://a/1", "a", 0.0)
    for k in range(first + 1):
        other = planner.visit(other, (k + 1) * 10 * DAY, changed=True)
    assert other.rule == "probe"
    back = planner.visit(other, other.history.last_access + other.interval, changed=False)
    assert back.rule == "budget" and back.interval < 100 * DAY


def test_planner_starts_new_pages_at_their_neighbours_rate_and_uses_dates_first():
    from dataclasses import replace as _replace

    from crawlproj.revisit.state import group_keys

    assert group_keys("http://a.test/docs/x.html", "a.test") == ("a.test/docs", "a.test")
    planner = Planner(RevisitPolicy(min_interval=60, first_interval=(100, 100)), "budget", random.Random(1))
    states = []
    for i in range(60):  # a directory of pages that change about once an hour, visited for a day
        st = planner.first(f"http://a.test/docs/{i}", "a.test", 0.0)
        history = st.history
        for t in range(3600, 86400, 3600):
            history = history.visit(float(t), changed=i % 3 != 0 or t % 7200 == 0)
        states.append(_replace(st, history=history))
    planner.fit_priors(states)
    assert planner.grid_fitted and planner.group_rate("http://a.test/docs/new", "a.test") > 1 / 86400
    planner.mu = 1e4
    new = planner.first("http://a.test/docs/new", "a.test", 86400.0)
    assert new.source == "prior" and new.rule == "budget/prior"
    dated = planner.first("http://a.test/docs/dated", "a.test", 86400.0, modified_at=86400.0 - 600)
    assert dated.source == "dates" and dated.dated_exposure == 600
    assert planner.first("http://b.test/x", "b.test", 0.0).source == "prior"  # the crawl's own prior


def test_a_commit_after_the_pipeline_closed_does_nothing(tmp_path):
    """The store's last flush at the spider's close signals a commit after this pipeline closed its
    queue; with a replan due it once read the closed database and logged an ERROR."""
    pipeline, _, _ = _pipeline(tmp_path, REVISIT_REPLAN_SECONDS=0.001)
    pipeline.process_item(_page("http://a.test/1"))
    pipeline.commit()
    pipeline.close_spider()
    pipeline.commit()  # no "Cannot operate on a closed database"
