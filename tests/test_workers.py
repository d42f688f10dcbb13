"""``-s WORKERS=N``: several crawl processes on one machine over a Redis the command starts itself."""

import json
import sqlite3
import subprocess

import pytest

from sandbox.harness import run_crawl

pytestmark = pytest.mark.slow

INTERVAL = 0.2


def test_two_workers_crawl_the_sandbox_completely_and_politely_into_one_store(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "12", "--pages", "14", "--no-robots-mix")
    store = tmp_path / "crawl.db"
    result = run_crawl("web", tmp_path, args={"seeds": sandbox.seeds_file}, settings={
        "WORKERS": 2, "HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{store}",
        "MIN_INTERVAL": INTERVAL, "RENDER_MODE": "never", "DASHBOARD_PORT": 0, "FRONTIER_PARTITIONS": 8,
        "WORKER_HEARTBEAT": 0.5, "PARTITION_LEASE": 4, "LAST_CRAWL_FILE": str(tmp_path / "last_crawl.json")})
    # A worker that died early said why far above the log's tail: its errors come first.
    errors = [line for line in result.log.splitlines() if "ERROR" in line or "Error" in line or "Traceback" in line]
    assert result.returncode == 0, "\n".join(errors[:30]) + "\n...\n" + result.log[-2000:]
    # Nothing a user need not read (issue 41, item 7): Scrapy's deprecation of BaseDupeFilter.log
    # came with every WORKERS crawl.
    noise = [line for line in result.log.splitlines() if "Warning" in line or "deprecated" in line]
    assert noise == [], noise[:5]
    assert "found no scrapy.spidermiddlewares.referer.RefererMiddleware" not in result.log  # issue 58
    # The last crawl is the merged store, not one worker's shard: `scrapy report` reads all of it.
    assert json.loads((tmp_path / "last_crawl.json").read_text())["store"] == f"sqlite:///{store}"
    # One store, merged from the workers' shards: every page a correct crawler stores.
    with sqlite3.connect(store) as conn:
        pages = {u for (u,) in conn.execute("SELECT url FROM pages")}
    assert pages == sandbox.web.expected_pages()
    shards = sorted((tmp_path / "crawl.workers").glob("*/crawl.db"))
    assert [s.parent.name for s in shards] == ["worker1", "worker2"]
    per_shard = [sqlite3.connect(s).execute("SELECT COUNT(*) FROM pages").fetchone()[0] for s in shards]
    assert sum(per_shard) >= len(pages) and all(n > 0 for n in per_shard), per_shard  # both did work
    # Polite at the server, across both workers.
    report = sandbox.report(INTERVAL)
    assert report["violations"] == 0, report
    # Redis kept its data beside the store, and was stopped.
    assert list((tmp_path / "crawl.redis").rglob("*.aof"))
    assert subprocess.run(["pgrep", "-f", str(tmp_path / "crawl.redis")], capture_output=True).returncode == 1


def test_workers_must_be_a_positive_whole_number(tmp_path):
    result = run_crawl("web", tmp_path, settings={"WORKERS": 0, "STORE_URI": f"sqlite:///{tmp_path}/c.db"},
                       timeout=120)
    assert result.returncode != 0 and "WORKERS" in result.log
