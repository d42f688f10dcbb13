"""Crawl ordering in real crawls, judged from the sandbox server's record."""

from __future__ import annotations

import json
import pickle
import sqlite3
import subprocess
import time

import pytest

from sandbox.harness import PROJECT_DIR, crawl_command, crawl_sandbox, run_crawl

pytestmark = pytest.mark.slow

INTERVAL = 0.1


@pytest.mark.serial  # the root's links must all be queued before the next fetch is due
def test_the_frontier_fetches_in_score_order_within_politeness(sandbox_factory, tmp_path):
    # One host whose root links every page: once the root is in, the order is the frontier's.
    sandbox = sandbox_factory("--hosts", "1", "--pages", "31", "--no-robots-mix", "--host", "0:content=variants")
    web = sandbox.web
    groups = {"high": range(1, 31, 3), "middle": range(2, 31, 3), "low": range(3, 31, 3)}
    value = {"high": 100.0, "middle": 1.0, "low": 0.01}
    scores = {web.url(0, 0): 1.0}
    scores.update({web.url(0, k): value[g] for g, ks in groups.items() for k in ks})
    path = tmp_path / "scores.json"
    path.write_text(json.dumps(scores))
    crawl_sandbox(sandbox, tmp_path, MIN_INTERVAL=INTERVAL, PRIORITIZER="scores",
                  PRIORITY_SCORES_FILE=str(path), RENDER_MODE="never")
    order = [r.path for r in sorted(sandbox.records(), key=lambda r: r.arrival) if r.path != "/robots.txt"]
    assert order[0] == "/"
    group_of = {web.path(k): g for g, ks in groups.items() for k in ks}
    seen = [group_of[p] for p in order[1:] if p in group_of]
    assert seen == ["high"] * 10 + ["middle"] * 10 + ["low"] * 10, seen
    report = sandbox.report(INTERVAL)
    assert report["violations"] == 0 and report["max_concurrency"] == 1


def test_importance_state_persists_across_a_resume(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "8", "--pages", "15", "--no-robots-mix", "--importance")
    jobdir = tmp_path / "job"
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{tmp_path / 'crawl.db'}",
                "MIN_INTERVAL": 0.05, "RENDER_MODE": "never", "PRIORITIZER": "opic:0.5,backlinks:0.5",
                "JOBDIR": str(jobdir)}
    first = run_crawl("web", tmp_path / "run1", args={"seeds": sandbox.seeds_file},
                      settings={**settings, "CLOSESPIDER_PAGECOUNT": 30})
    assert first.returncode == 0, first.log[-3000:]
    tracked = first.stats["ordering/tracked"]
    with open(jobdir / "frontier" / "ordering.pickle", "rb") as fh:
        saved = pickle.load(fh)
    cash = saved["components"]["opic"]
    assert tracked > 0 and len(cash) + len(saved["components"]["backlinks"]) == tracked
    assert sum(cash.values()) > 0
    second = run_crawl("web", tmp_path / "run2", args={"seeds": sandbox.seeds_file}, settings=settings)
    assert second.returncode == 0, second.log[-3000:]
    assert second.stats["ordering/restored"] == tracked
    assert f"ordering state restored: {tracked} URLs" in second.log
    with sqlite3.connect(tmp_path / "crawl.db") as conn:
        stored = {u for (u,) in conn.execute("SELECT url FROM pages")}
    assert stored == sandbox.web.expected_pages()  # nothing lost across the stop
    assert sandbox.report(0.05)["violations"] == 0


@pytest.mark.serial  # the list is read every 0.2 s, mid-crawl
def test_opt_out_list_takes_effect_mid_crawl(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "4", "--pages", "40", "--no-robots-mix")
    web = sandbox.web
    opt_out = tmp_path / "opt-out.txt"  # absent at start: an empty list
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{tmp_path / 'crawl.db'}",
                "MIN_INTERVAL": 0.15, "RENDER_MODE": "never", "OPT_OUT_FILE": str(opt_out),
                "OPT_OUT_RELOAD_SECONDS": 0.2, "STATS_FILE": str(tmp_path / "stats.json")}
    proc = subprocess.Popen(crawl_command("web", {"seeds": sandbox.seeds_file}, settings), cwd=PROJECT_DIR,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        target = web.host_name(1)
        deadline = time.monotonic() + 60
        while sum(r.host == target for r in sandbox.records()) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        opt_out.write_text(f"# complaint from the owner\n{target}\n")
        before = sum(r.host == target for r in sandbox.records())
        assert proc.wait(timeout=180) == 0
        log = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    after = sum(r.host == target for r in sandbox.records())
    # Within one reload period and the request in flight, the host is left alone.
    assert 5 <= before and after <= before + 3, (before, after)
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["frontier/opt_out_dropped"] > 0 and stats["finish_reason"] == "finished"
    assert f"opt-out: {target} is excluded" in log
    with sqlite3.connect(tmp_path / "crawl.db") as conn:
        stored = {u for (u,) in conn.execute("SELECT url FROM pages")}
    expected = web.expected_pages()
    others = {u for u in expected if f"//{target}" not in u}
    assert others <= stored  # the other hosts are crawled in full
    assert len([u for u in stored if f"//{target}" in u]) < len(expected - others)


@pytest.mark.serial  # focus waits of 0.5 s
def test_a_focused_crawl_fetches_the_topic_first_and_never_stalls_on_a_parked_host(sandbox_factory, tmp_path):
    """Topical ordering at the server: on-topic pages come before off-topic ones. One on-topic
    host answers only 503 and is parked for 10 minutes with on-topic URLs still queued: the
    off-topic pages wait for them TOPICAL_FOCUS_WAIT at most, not for the park to end (no
    tunnelling limit here: every page of a healthy host must come)."""
    from urllib.parse import urlsplit

    from sandbox.graph import TOPIC_WORDS_EN, TOPICS

    sandbox = sandbox_factory("--hosts", "9", "--pages", "12", "--topics", "3", "--no-robots-mix", "--no-japanese",
                              "--host", "1:error_rate=1.0")
    web = sandbox.web
    topic = web.topic_of(1)
    failing = web.host_name(1)
    on_topic = {web.host_name(h) for h in web.hosts if web.topic_of(h) == topic}
    expected = {(urlsplit(u).hostname, urlsplit(u).path) for u in web.expected_crawl()} - {
        (failing, web.path(k)) for k in range(web.size(1))}
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{tmp_path / 'crawl.db'}",
                "MIN_INTERVAL": 0.05, "RENDER_MODE": "never", "PRIORITIZER": "topical",
                "TOPICAL_FOCUS_WAIT": 0.5, "TOPICAL_TUNNEL": 100, "STATS_FILE": str(tmp_path / "stats.json"),
                # two 503s in quick succession park the host, its last retry still queued
                "RETRY_BACKOFF_BASE": 0.1, "BACKOFF_DEFAULT": 0.1, "HOST_PARK_AFTER": 2, "HOST_PARK_FOR": 600}
    args = {"seeds": sandbox.seeds_file, "topic": " ".join(TOPIC_WORDS_EN[TOPICS[topic]][:4])}
    proc = subprocess.Popen(crawl_command("web", args, settings), cwd=PROJECT_DIR,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while not expected <= {(r.host, r.path) for r in sandbox.records()} and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.terminate()  # the parked host would keep the crawl open for 10 minutes: stop it
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    records = sorted(sandbox.records(), key=lambda r: r.arrival)
    served = {(r.host, r.path) for r in records}
    assert expected <= served, f"{len(expected - served)} pages of healthy hosts never fetched: the crawl stalled"
    assert sum(r.host == failing for r in records if r.path != "/robots.txt") >= 2  # it failed and was parked
    first: dict = {}
    for r in records:
        if (r.host, r.path) in expected:
            first.setdefault((r.host, r.path), len(first))
    on = [rank for (host, _), rank in first.items() if host in on_topic]
    off = [rank for (host, _), rank in first.items() if host not in on_topic]
    assert sum(on) / len(on) < sum(off) / len(off)  # the topic first
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["ordering/focus_waits_expired"] >= 1 and stats.get("frontier/hosts_parked", 0) >= 1
    assert sandbox.report(0.05)["violations"] == 0
