"""Operating a crawl: /metrics scraped and parsed during a sandbox crawl, URLs added to a running
local crawl, the dead-letter queue across a failing and recovering host (and a kill -9), and
the completion estimate, pure and on sandbox crawls of three shapes."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from crawlproj.dashboard.board import HostBoard, RateSeries, snapshot
from crawlproj.dashboard.cluster import aggregate
from crawlproj.dashboard.metrics import metrics_text
from crawlproj.frontier.completion import CompletionEstimator
from sandbox.harness import PROJECT_DIR, crawl_command, dashboard_urls, run_crawl
from crawlproj.distributed.deadletters import RedisDeadLetters
from crawlproj.store.deadletters import SqliteDeadLetters

pytestmark = pytest.mark.slow

OPERATOR, VIEWER = "operator-token-0123456789", "viewer-token-0123456789"


def _get(url: str, token: str | None = None, data: bytes | None = None) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _metrics(text: bytes) -> dict[tuple[str, tuple], float]:
    """(sample name, labels) -> value, parsed by prometheus_client's own parser."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text.decode()) for s in family.samples}


def _scrapy(*args: str, **settings: object) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "scrapy", *args]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    return subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)


# -- pure ------------------------------------------------------------------------
def test_completion_estimate_from_tails_throughput_and_discovery():
    est = CompletionEstimator(window=10)
    assert est.estimate([], 10, 0, 0) is None  # no rate yet
    est.observe(0.0, 0, 0, 0)
    est.observe(10.0, 100, 50, 150)  # 10 pages/s; a quarter of the links followed led to new URLs
    # 100 queued + 100 fetched known, novelty 1/4: 200 * (1/4) / (3/4) = 66.7 unknown, so the
    # work left grows by 5/3. One host with 40 URLs at 1 s: a 40 s tail, 66.7 s with discovery.
    done = est.estimate([("big", 40, 1.0, 0.0), ("small", 2, 1.0, 0.5)], 100, 0, 100)
    assert done.bound == "politeness" and done.tail_key == "big" and done.tail_seconds == 40
    assert done.low == pytest.approx(40) and done.seconds == pytest.approx((40 * 40 * 5 / 3) ** 0.5)
    assert done.high > 40 * 5 / 3 and not done.growing
    # Many small hosts: the queue at the fetch rate sets it.
    wide = est.estimate([(f"h{i}", 1, 1.0, 0.0) for i in range(500)], 500, 0, 100)
    assert wide.bound == "throughput" and wide.low == pytest.approx(50)
    est.observe(20.0, 200, 1000, 160)  # nearly every link new: the web is still opening up
    assert est.estimate([], 100, 0, 200).growing


def test_metrics_and_the_cluster_view_from_snapshots():
    stats = {"response_received_count": 44, "store/pages": 40, "crawlproj/fetch_errors/timeout": 3,
             "downloader/response_status_count/200": 30,
             "downloader/response_status_count/503": 3, "downloader/response_status_count/404": 7,
             "downloader/response_bytes": 1234, "frontier/hosts_by_rule/min_interval": 4,
             "frontier/hosts_by_rule/parked": 1, "frontier/queued_memory": 9, "frontier/estimate_seconds": 12.0,
             "frontier/estimate_low_seconds": 10.0, "frontier/estimate_high_seconds": 20.0,
             "frontier/estimate_discovery": 0.2, "store/commits": 3, "deadletters/kept": 2,
             "process/rss_bytes": 300 * 2**20, "process/rss_growth_per_1000_pages": 2**20}
    view = snapshot(stats, RateSeries(), HostBoard(), [], {}, 0.0, spider="web", time=100.0)
    m = _metrics(metrics_text(view)[0])
    assert m[("crawlproj_pages_total", ())] == 40 and m[("crawlproj_response_bytes_total", ())] == 1234
    assert m[("crawlproj_responses_total", (("status_class", "2xx"),))] == 30
    assert m[("crawlproj_responses_total", (("status_class", "4xx"),))] == 7
    assert m[("crawlproj_errors_total", (("kind", "timeout"),))] == 3  # the console's errors
    assert m[("crawlproj_hosts_by_interval_rule", (("rule", "parked"),))] == 1
    assert m[("crawlproj_frontier_urls", (("where", "memory"),))] == 9
    assert m[("crawlproj_completion_estimate_seconds", (("bound", "high"),))] == 20
    assert m[("crawlproj_deadletters", ())] == 2 and m[("crawlproj_store_commits_total", ())] == 3
    assert m[("crawlproj_resident_memory_bytes", ())] == 300 * 2**20
    assert m[("crawlproj_resident_memory_growth_bytes_per_1000_pages", ())] == 2**20
    # The whole distributed crawl: the workers' figures add up; the last worker sets the end.
    other = {**view, "worker": "w2", "pages": 10, "estimate": {**view["estimate"], "seconds": 30.0},
             "memory": {**view["memory"], "growth_per_1000_pages": 3 * 2**20}}
    total = _metrics(metrics_text(aggregate([view, other], 200.0, 100.0, []))[0])
    assert total[("crawlproj_pages_total", ())] == 50
    assert total[("crawlproj_responses_total", (("status_class", "2xx"),))] == 60
    assert total[("crawlproj_completion_estimate_seconds", (("bound", "expected"),))] == 30
    assert total[("crawlproj_workers", ())] == 2
    assert total[("crawlproj_resident_memory_bytes", ())] == 600 * 2**20  # both processes
    assert total[("crawlproj_resident_memory_growth_bytes_per_1000_pages", ())] == 3 * 2**20  # the worst one


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_dead_letters_add_up_are_marked_taken_and_purged(backend, tmp_path, request):
    if backend == "sqlite":
        store = SqliteDeadLetters(str(tmp_path / "d.db"))
    else:  # the distributed profile's: a real redis-server
        import redis

        server = request.getfixturevalue("redis_server")
        store = RedisDeadLetters(redis.Redis.from_url(server.url), "t:deadletters")
    store.add("http://a.test/1", "a.test", "timeout", 3, "TimeoutError", 1, 10.0)
    store.add("http://a.test/1", "a.test", "http_503", 3, "HTTP 503", 1, 20.0)  # failed again later
    store.add("http://b.test/", "b.test", "dns", 3, "no such host", 0, 30.0)
    [first, _] = store.list()
    assert (first.attempts, first.kind, first.first_at, first.last_at) == (6, "http_503", 10.0, 20.0)
    assert store.mark_retry(host="a.test") == 1
    assert [d.url for d in store.take_marked(10)] == ["http://a.test/1"] and store.take_marked(10) == []
    assert [d.url for d in store.list()] == ["http://b.test/"]
    assert store.purge(kind="dns") == 1 and store.list() == []


# -- a running crawl --------------------------------------------------------------
def test_metrics_scraped_during_a_crawl_and_urls_added_through_the_dashboard(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "4", "--pages", "30", "--no-robots-mix", "--cross-host", "0")
    web = sandbox.web
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(web.url(h, 0) + "\n" for h in range(3)))  # host 3 is not seeded
    url_file = tmp_path / "dashboard.json"
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{tmp_path / 'crawl.db'}",
                "MIN_INTERVAL": 0.3, "RENDER_MODE": "never", "DASHBOARD_PORT": 0, "DASHBOARD_INTERVAL": 0.2,
                "DASHBOARD_TOKEN": OPERATOR, "DASHBOARD_READONLY_TOKEN": VIEWER, "DASHBOARD_URL_FILE": str(url_file),
                "STATS_FILE": str(tmp_path / "stats.json")}
    proc = subprocess.Popen(crawl_command("web", {"seeds": str(seeds)}, settings), cwd=PROJECT_DIR,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        urls = dashboard_urls(url_file, proc)
        base = f"http://127.0.0.1:{urls['port']}"
        assert _get(base + "/metrics")[0] == 401
        time.sleep(2)
        status, first = _get(base + "/metrics", VIEWER)  # as Prometheus sends it: a Bearer header
        assert status == 200
        time.sleep(1.5)
        status, second = _get(f"{base}/metrics?token={VIEWER}")
        assert status == 200
        a, b = _metrics(first), _metrics(second)
        assert 0 < a[("crawlproj_pages_total", ())] < b[("crawlproj_pages_total", ())]
        assert b[("crawlproj_responses_total", (("status_class", "2xx"),))] > 0
        assert b[("crawlproj_hosts_by_interval_rule", (("rule", "min_interval"),))] >= 1
        assert b[("crawlproj_frontier_urls", (("where", "memory"),))] > 0
        assert ("crawlproj_store_commit_lag_seconds", ()) in b and ("crawlproj_requests_in_flight", ()) in b
        assert 30 * 2**20 < b[("crawlproj_resident_memory_bytes", ())] < 4 * 2**30  # read while it runs
        low, expected, high = (b[("crawlproj_completion_estimate_seconds", (("bound", k),))]
                               for k in ("low", "expected", "high"))
        assert 0 < low <= expected <= high
        # URLs added to the running crawl: the viewer may not, the operator may; a bad one is refused.
        extra = tmp_path / "extra.txt"
        extra.write_text(f"{web.url(3, 0)}\nftp://example.org/x\n")
        assert _get(base + "/seed", VIEWER, data=b"http://x.test/")[0] == 403
        added = subprocess.run([sys.executable, "-m", "scrapy", "seed", str(extra), "--dashboard", str(url_file)],
                               cwd=PROJECT_DIR, capture_output=True, text=True, timeout=60)
        assert added.returncode == 0, added.stderr[-2000:]
        said = json.loads(added.stdout.strip().splitlines()[-1])
        assert said["added"] == 1 and said["refused_in_files"] == 1
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    # The added host was crawled: its robots.txt, then its pages, politely.
    host3 = [r for r in sandbox.records() if r.host == web.host_name(3)]
    assert host3 and host3[0].path == "/robots.txt" and len(host3) > 5
    assert sandbox.report(0.3)["violations"] == 0
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["dashboard/seeded"] == 1


def test_dead_letters_of_a_failing_host_survive_a_kill_and_are_retried_once_it_recovers(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "2", "--pages", "6", "--no-robots-mix", "--cross-host", "0",
                              "--out-links", "0")
    web = sandbox.web
    sandbox.set_down(1)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(web.url(0, 0) + "\n" + "".join(web.url(1, k) + "\n" for k in range(6)))
    db = tmp_path / "crawl.db"
    letters = tmp_path / "crawl.deadletters.db"
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{db}", "MIN_INTERVAL": 0.05,
                "RENDER_MODE": "never", "RETRY_TIMES": 1, "RETRY_BACKOFF_BASE": 0.05, "HOST_PARK_AFTER": 0,
                "BACKOFF_DEFAULT": 0.1,  # a 503 without Retry-After rests the host this long
                "JOBDIR": str(tmp_path / "job"), "DASHBOARD_ENABLED": False}
    proc = subprocess.Popen(crawl_command("web", {"seeds": str(seeds)}, settings), cwd=PROJECT_DIR,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # every page of host 1 failed twice: kill the crawl at once
        if letters.exists() and len(SqliteDeadLetters(str(letters)).list()) == 6:
            break
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    queue = {"STORE_URI": f"sqlite:///{db}"}
    listed = _scrapy("deadletters", "list", "--json", **queue)
    assert listed.returncode == 0, listed.stderr[-2000:]
    kept = json.loads(listed.stdout)
    assert sorted(d["url"] for d in kept) == sorted(web.url(1, k) for k in range(6))
    assert all(d["kind"] == "http_503" and d["attempts"] == 2 and d["host"] == web.host_name(1) for d in kept)
    assert _scrapy("deadletters", "list", "--kind", "dns", "--json", **queue).stdout.strip() == "[]"
    # The host recovers; the operator marks its letters; the resumed crawl sends them past the
    # URL-seen filter (the JOBDIR frontier holds every one of them).
    sandbox.set_down(1, down=False)
    sandbox.reset()
    marked = _scrapy("deadletters", "retry", "--host", web.host_name(1), **queue)
    assert marked.returncode == 0 and "6 marked for retry" in marked.stdout
    result = run_crawl("web", tmp_path / "again", args={"seeds": str(seeds)}, settings=settings)
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["deadletters/retried"] == 6
    fetched = {f"http://{r.host}:{sandbox.port}{r.path}" for r in sandbox.records() if r.status == 200}
    assert {web.url(1, k) for k in range(6)} <= fetched
    stored = dict(sqlite3.connect(db).execute("SELECT url, status FROM pages"))
    assert all(stored[web.url(1, k)] == 200 for k in range(6))
    assert json.loads(_scrapy("deadletters", "list", "--json", **queue).stdout) == []
    assert _scrapy("deadletters", "explode", **queue).returncode != 0


def test_the_grafana_dashboard_reads_only_metrics_that_exist():
    import re

    dashboard = json.loads((Path(PROJECT_DIR) / "docs" / "grafana-dashboard.json").read_text())
    wanted = {name for panel in dashboard["panels"] for target in panel["targets"]
              for name in re.findall(r"crawlproj_[a-z_]+", target["expr"])}
    view = snapshot({"frontier/estimate_seconds": 1.0, "frontier/estimate_low_seconds": 1.0,
                     "frontier/estimate_high_seconds": 2.0}, RateSeries(), HostBoard(), [], {}, 0.0, time=1.0)
    served = {f.name for f in text_string_to_metric_families(metrics_text(view)[0].decode())}
    served |= {f"{name}_total" for name in served}  # counters are written with _total
    assert wanted and wanted <= served, wanted - served


def test_dead_letters_marked_for_retry_go_again_in_the_running_crawl(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "2", "--pages", "40", "--no-robots-mix", "--cross-host", "0")
    web = sandbox.web
    sandbox.set_down(1)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(web.url(0, 0) + "\n" + "".join(web.url(1, k) + "\n" for k in range(4)))
    db = tmp_path / "crawl.db"
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{db}", "MIN_INTERVAL": 0.3,
                "RENDER_MODE": "never", "RETRY_TIMES": 1, "RETRY_BACKOFF_BASE": 0.05, "HOST_PARK_AFTER": 0,
                "BACKOFF_DEFAULT": 0.1, "DEADLETTERS_POLL_SECONDS": 0.5, "DASHBOARD_ENABLED": False,
                "STATS_FILE": str(tmp_path / "stats.json")}
    proc = subprocess.Popen(crawl_command("web", {"seeds": str(seeds)}, settings), cwd=PROJECT_DIR,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        letters = tmp_path / "crawl.deadletters.db"
        deadline = time.monotonic() + 60
        while not (letters.exists() and len(SqliteDeadLetters(str(letters)).list()) == 4):
            assert proc.poll() is None and time.monotonic() < deadline, "host 1's pages never became dead letters"
            time.sleep(0.1)
        # Host 0's 40 pages at 0.3 s keep the crawl running while host 1 comes back and is retried.
        sandbox.set_down(1, down=False)
        marked = _scrapy("deadletters", "retry", "--host", web.host_name(1), STORE_URI=f"sqlite:///{db}")
        assert "4 marked for retry" in marked.stdout, marked.stdout + marked.stderr
        assert proc.wait(timeout=120) == 0, proc.stderr.read()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["deadletters/added"] == 4 and stats["deadletters/retried"] == 4
    stored = dict(sqlite3.connect(db).execute("SELECT url, status FROM pages"))
    assert all(stored[web.url(1, k)] == 200 for k in range(4))
    assert len([u for u in stored if u.startswith(web.origin(0))]) >= 30  # the crawl went on meanwhile
    assert SqliteDeadLetters(str(letters)).list() == []
