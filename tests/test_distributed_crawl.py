"""Distributed crawls: real worker processes sharing a real redis-server, against the sandbox."""

import glob
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest
import redis

from sandbox.harness import PROJECT_DIR, crawl_command

pytestmark = [pytest.mark.slow, pytest.mark.serial]

INTERVAL = 0.2
DASHBOARD_TOKEN = "distributed-dashboard-token"


def distributed_settings(redis_server, sandbox, tmp_path, **extra):
    return {"HOST_RESOLVE": sandbox.host_resolve, "REDIS_URL": redis_server.url, "REDIS_PREFIX": "test",
            "SCHEDULER": "crawlproj.distributed.scheduler.DistributedScheduler",
            "DUPEFILTER_CLASS": "crawlproj.distributed.dupefilter.RedisBloomDupeFilter",
            "STORE_URI": f"sqlite:///{tmp_path}/shards/{{worker}}/crawl.db", "FRONTIER_PARTITIONS": 8,
            "MIN_INTERVAL": INTERVAL, "WORKER_HEARTBEAT": 0.5, "WORKER_TTL": 2, "PARTITION_LEASE": 4,
            "STORE_FLUSH_INTERVAL": 0.5, "RENDER_MODE": "never", "CONCURRENT_REQUESTS": 8,
            "DASHBOARD_REDIS": True, "DASHBOARD_PORT": 0, "DASHBOARD_TOKEN": DASHBOARD_TOKEN,
            "DASHBOARD_INTERVAL": 0.3, **extra}


def stored(tmp_path) -> int:
    total = 0
    for shard in glob.glob(f"{tmp_path}/shards/*/crawl.db"):
        try:
            with sqlite3.connect(shard, timeout=5) as conn:
                total += conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
        except sqlite3.OperationalError:
            pass
    return total


def stored_urls(tmp_path) -> set[str]:
    """Every shard's pages together."""
    pages = set()
    for shard in glob.glob(f"{tmp_path}/shards/*/crawl.db"):
        with sqlite3.connect(shard) as conn:
            pages |= {url for (url,) in conn.execute("SELECT url FROM pages")}
    return pages


def finish(workers: dict, tmp_path, timeout: float) -> None:
    """Each worker ends well (its log's end if not)."""
    for name, proc in workers.items():
        assert proc.wait(timeout=timeout) == 0, (tmp_path / f"{name}.log").read_text()[-3000:]


def kill_left(workers) -> None:
    for proc in workers:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def start_worker(settings, seeds, name, tmp_path):
    log = open(tmp_path / f"{name}.log", "w")
    settings = {**settings, "WORKER_ID": name, "DASHBOARD_URL_FILE": str(tmp_path / f"{name}.dashboard.json")}
    return subprocess.Popen(crawl_command("web", {"seeds": seeds}, settings),
                            cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=log)


def test_kill_9_of_a_worker_loses_nothing_and_politeness_holds(redis_server, sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "16", "--pages", "24")
    expected = sandbox.web.expected_pages()  # reachable, fetched and not noindex
    # Importance ordering, its state in Redis: a kill -9 loses no page of it either.
    settings = distributed_settings(redis_server, sandbox, tmp_path, PRIORITIZER="opic:0.5,backlinks:0.5")
    # `scrapy dashboard`: the whole crawl's view from Redis, served with no crawl of its own
    # (started first: a Python start-up must not delay the kill below).
    url_file = tmp_path / "cluster.dashboard.json"
    command = [sys.executable, "-m", "scrapy", "dashboard", "-s", f"REDIS_URL={redis_server.url}",
               "-s", "REDIS_PREFIX=test", "-s", "DASHBOARD_PORT=0", "-s", f"DASHBOARD_TOKEN={DASHBOARD_TOKEN}",
               "-s", f"DASHBOARD_URL_FILE={url_file}", "-s", "DASHBOARD_INTERVAL=0.3"]
    viewer = subprocess.Popen(command, cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    one = start_worker(settings, sandbox.seeds_file, "w1", tmp_path)
    # w2 stores nothing before it is killed: everything it fetched is still pending in Redis,
    # so the survivors must put it back (else the kill could land when w2 had nothing unstored).
    two = start_worker({**settings, "STORE_FLUSH_INTERVAL": 600, "STORE_BATCH_SIZE": 100_000},
                       sandbox.seeds_file, "w2", tmp_path)
    workers = [viewer, one, two]
    try:
        deadline = time.monotonic() + 90
        while stored(tmp_path) < len(expected) // 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert two.poll() is None, (tmp_path / "w2.log").read_text()[-3000:]
        # Each worker's dashboard shows every worker, over Redis.
        dashboard = json.loads((tmp_path / "w1.dashboard.json").read_text())
        while time.monotonic() < deadline:
            with urllib.request.urlopen(dashboard["operator"].replace("/?", "/snapshot.json?"), timeout=10) as resp:
                view = json.load(resp)
            if {w["worker"] for w in view.get("workers") or []} == {"w1", "w2"}:
                break
            time.sleep(0.2)
        assert {w["worker"] for w in view["workers"]} == {"w1", "w2"}, view.get("workers")
        assert all(w["pages"] > 0 for w in view["workers"])
        assert url_file.exists(), viewer.stderr.read()[-2000:]
        snapshot_url = json.loads(url_file.read_text())["operator"].replace("/?", "/snapshot.json?")
        with urllib.request.urlopen(snapshot_url, timeout=10) as resp:
            whole = json.load(resp)
        assert {w["worker"] for w in whole["workers"]} == {"w1", "w2"}, whole
        assert whole["pages"] == sum(w["pages"] for w in whole["workers"]) > 0, whole
        # Its /metrics: the whole crawl's, parsed by prometheus_client (both workers' responses add up).
        from prometheus_client.parser import text_string_to_metric_families

        with urllib.request.urlopen(snapshot_url.replace("/snapshot.json?", "/metrics?"), timeout=10) as resp:
            samples = {s.name: s for f in text_string_to_metric_families(resp.read().decode()) for s in f.samples}
        assert samples["crawlproj_workers"].value == 2 and samples["crawlproj_pages_total"].value > 0
        assert "crawlproj_responses_total" in samples and "crawlproj_frontier_urls" in samples
        viewer.terminate()
        two.send_signal(signal.SIGKILL)  # mid-crawl: hosts leased, pages fetched and not yet stored
        two.wait()
        three = start_worker(settings, sandbox.seeds_file, "w3", tmp_path)  # a new worker joins at once
        workers.append(three)
        for proc, name in ((one, "w1"), (three, "w3")):
            assert proc.wait(timeout=180) == 0, (tmp_path / f"{name}.log").read_text()[-3000:]
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    # `scrapy merge`, with its progress bar (forced on: stderr is not a terminal here).
    merge = subprocess.run([sys.executable, "-m", "scrapy", "merge", str(tmp_path / "merged.db"),
                            f"{tmp_path}/shards/*/crawl.db"], cwd=PROJECT_DIR, capture_output=True, text=True,
                           timeout=300, env={**os.environ, "CRAWLPROJ_PROGRESS": "1"})
    assert merge.returncode == 0, merge.stderr[-2000:]
    summary = json.loads(merge.stdout)
    assert summary["shards"] == 3
    bar = merge.stderr.replace("\r", "\n").strip().splitlines()[-1]
    assert bar.startswith("merging shards: 100%") and "3/3" in bar and "ETA" in bar, bar
    with sqlite3.connect(tmp_path / "merged.db") as conn:
        pages = {url for (url,) in conn.execute("SELECT url FROM pages")}
    assert pages == expected, sorted(expected ^ pages)[:10]  # every reachable page is stored, nothing else
    report = sandbox.report(interval=INTERVAL)
    assert report["violations"] == 0 and report["max_concurrency"] == 1, report["per_host"]
    logs = [(tmp_path / f"{name}.log").read_text() for name in ("w1", "w3")]
    assert all(f"worker {name} joined" in log for name, log in zip(("w1", "w3"), logs))
    # The killed worker's unstored requests were put back by a survivor (each worker's stats
    # file is beside its shard).
    returned = [json.loads((tmp_path / "shards" / name / "crawl.stats.json").read_text())
                .get("distributed/returned_from_dead_workers", 0) for name in ("w1", "w3")]
    assert any(n > 0 for n in returned), returned


def test_incremental_distributed_crawl_revisits_by_host_partition(redis_server, sandbox_factory, tmp_path):

    import redis

    from crawlproj.distributed.revisit_queue import RedisRevisitQueue

    sandbox = sandbox_factory("--hosts", "6", "--pages", "6", "--no-robots-mix", "--change-min", "3600",
                              "--change-max", str(30 * 86400), "--time-scale", "14400")
    settings = distributed_settings(
        redis_server, sandbox, tmp_path, REVISIT_MODE="incremental",
        REVISIT_QUEUE_CLASS="crawlproj.distributed.revisit_queue.RedisRevisitQueue",
        NEAR_DUPLICATES_INDEX_CLASS="crawlproj.distributed.near_duplicates.RedisNearDuplicateIndex", REVISIT_TIME_SCALE=14400, REVISIT_MIN_INTERVAL=3600,
        REVISIT_FIRST_INTERVAL=[3600, 7200], REVISIT_REFRESH_SECONDS=0.1, REVISIT_BUDGET=24 * 100,
        MIN_INTERVAL=0.05, STORE_FLUSH_INTERVAL=0.1, CLOSESPIDER_TIMEOUT=15)
    workers = {n: start_worker({**settings, "STATS_FILE": str(tmp_path / f"{n}.json")}, sandbox.seeds_file, n,
                               tmp_path) for n in ("w1", "w2")}
    try:
        finish(workers, tmp_path, 120)
    finally:
        kill_left(workers.values())
    stats = [json.loads((tmp_path / f"{n}.json").read_text()) for n in ("w1", "w2")]
    queue = RedisRevisitQueue(redis.Redis.from_url(redis_server.url), "test", 8)
    assert queue.count() == len(sandbox.web.expected_pages())  # one state per page, shared
    assert all(s.get("revisit/requests", 0) > 0 for s in stats)  # both workers revisit their partitions
    # each host's pages were revisited by one worker at a time: politeness held across them
    report = sandbox.report(interval=0.05)
    assert report["violations"] == 0 and report["max_concurrency"] == 1
    assert report["not_modified"] > 0


def test_scrapy_seed_feeds_a_running_crawl(redis_server, sandbox_factory, tmp_path):
    import sys

    sandbox = sandbox_factory("--hosts", "4", "--pages", "8", "--no-robots-mix")
    empty = tmp_path / "no-seeds.txt"
    empty.write_text("# the workers start with nothing: the seeds come through Redis\n")
    # Importance ordering with its state in Redis (OPIC cash, backlinks, site sizes): the crawl
    # must still be complete, and Redis (not the worker) must have held the state.
    settings = distributed_settings(redis_server, sandbox, tmp_path,
                                    PRIORITIZER="opic:0.4,backlinks:0.3,larger_sites:0.3")
    client = redis.Redis.from_url(redis_server.url)
    client.config_set("notify-keyspace-events", "Kh")  # hash commands on keys, published
    events = client.pubsub()
    events.psubscribe("__keyspace@*__:test:*")
    worker = start_worker({**settings, "WORKER_IDLE_TIMEOUT": 8}, str(empty), "w1", tmp_path)
    try:
        time.sleep(3)
        assert worker.poll() is None  # nothing to do yet: it waits for seeds
        seed = subprocess.run([sys.executable, "-m", "scrapy", "seed", sandbox.seeds_file, "-s", "PROFILE=sandbox",
                               "-s", f"REDIS_URL={redis_server.url}", "-s", "REDIS_PREFIX=test"],
                              cwd=PROJECT_DIR, capture_output=True, text=True, timeout=60)
        assert seed.returncode == 0 and '"pushed": 4' in seed.stdout, seed.stdout + seed.stderr
        worker.wait(timeout=90)
    finally:
        if worker.poll() is None:
            worker.kill()
    with sqlite3.connect(tmp_path / "shards" / "w1" / "crawl.db") as conn:
        pages = {url for (url,) in conn.execute("SELECT url FROM pages")}
    assert pages == sandbox.web.expected_pages()
    seen: dict[str, set] = {}
    while (message := events.get_message(timeout=0.5)) is not None:
        if message["type"] == "pmessage":
            table = message["channel"].decode().split(":", 1)[1].rsplit(":", 1)[0]  # test:opic:<shard>
            seen.setdefault(table, set()).add(message["data"].decode())
    events.close()
    for table in ("test:opic", "test:backlinks", "test:larger_sites"):
        assert {"hincrbyfloat", "hdel"} <= seen.get(table, set()), (table, seen)
        assert not any(client.hlen(key) for key in client.scan_iter(f"{table}:*"))  # every waiting URL's entry was taken
    assert json.loads((tmp_path / "shards" / "w1" / "crawl.stats.json").read_text())["ordering/tracked"] == 0


def fetched_twice(sandbox) -> int:
    """Pages the sandbox served more than once (robots.txt aside), from its own record."""
    from collections import Counter

    counts = Counter((r.host, r.path) for r in sandbox.records() if r.path != "/robots.txt" and r.status == 200)
    return sum(n - 1 for n in counts.values() if n > 1)


def cluster_settings(cluster, sandbox, tmp_path, **extra):
    # Default partitions (64), spread over the masters. A failover stalls a worker's Redis calls
    # for about the cluster's node timeout and an election: WORKER_TTL must be longer, or the
    # stalled workers look dead to each other.
    return distributed_settings(cluster, sandbox, tmp_path, FRONTIER_PARTITIONS=64, WORKER_TTL=10,
                                PARTITION_LEASE=12, **extra)


def partitions_by_master(cluster, prefix: str, partitions: int = 64) -> dict[int, int]:
    from redis.crc import key_slot

    masters = cluster.masters_by_port()
    count = dict.fromkeys(masters, 0)
    for part in range(partitions):
        slot = key_slot(f"{{{prefix}:{part}}}:ready".encode())
        count[next(port for port, ranges in masters.items() if any(a <= slot <= b for a, b in ranges))] += 1
    return count


def test_a_crawl_over_a_redis_cluster_survives_a_master_failover(redis_cluster, sandbox_factory, tmp_path):
    """Two workers over a Redis Cluster (3 masters, 3 replicas); one master is killed mid-crawl.
    Its replica takes over, the crawl goes on, and from the sandbox's own record: every page is
    stored, politeness held, and no page was fetched twice beyond the few in flight."""
    sandbox = sandbox_factory("--hosts", "16", "--pages", "24")
    expected = sandbox.web.expected_pages()
    assert min(partitions_by_master(redis_cluster, "test").values()) >= 10  # the partitions spread over the masters
    settings = cluster_settings(redis_cluster, sandbox, tmp_path, PRIORITIZER="opic:0.5,backlinks:0.5")
    workers = {name: start_worker(settings, sandbox.seeds_file, name, tmp_path) for name in ("w1", "w2")}
    try:
        deadline = time.monotonic() + 90
        while stored(tmp_path) < len(expected) // 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(w.poll() is None for w in workers.values()), (tmp_path / "w1.log").read_text()[-3000:]
        victim = max(partitions_by_master(redis_cluster, "test").items(), key=lambda item: item[1])[0]
        redis_cluster.kill_master(victim)  # kill -9, mid-crawl: its replica must take over
        finish(workers, tmp_path, 180)
    finally:
        kill_left(workers.values())
    assert victim not in redis_cluster.masters_by_port() and len(redis_cluster.masters_by_port()) == 3
    pages = stored_urls(tmp_path)
    assert pages == expected, sorted(expected ^ pages)[:10]  # nothing lost
    report = sandbox.report(interval=INTERVAL)
    assert report["violations"] == 0 and report["max_concurrency"] == 1, report["per_host"]
    # Fetched twice: at most the requests in flight at the kill (2 workers x CONCURRENT_REQUESTS),
    # whose writes the dead master may have acknowledged before its replica had them.
    # The workers felt the failover: their calls to the dead master waited for its replica.
    waits = [json.loads((tmp_path / "shards" / name / "crawl.stats.json").read_text())
             .get("distributed/failover_waits", 0) for name in ("w1", "w2")]
    assert sum(waits) > 0, waits
    assert fetched_twice(sandbox) <= 2 * settings["CONCURRENT_REQUESTS"]


def test_a_worker_joining_a_cluster_crawl_takes_its_share_of_partitions(redis_cluster, sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "24", "--pages", "24", "--no-robots-mix")
    expected = sandbox.web.expected_pages()
    settings = cluster_settings(redis_cluster, sandbox, tmp_path, MIN_INTERVAL=0.4)
    workers = {name: start_worker(settings, sandbox.seeds_file, name, tmp_path) for name in ("w1", "w2")}
    try:
        deadline = time.monotonic() + 90
        while stored(tmp_path) < len(expected) // 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        workers["w3"] = start_worker(settings, sandbox.seeds_file, "w3", tmp_path)
        finish(workers, tmp_path, 180)
    finally:
        kill_left(workers.values())
    logs = {name: (tmp_path / f"{name}.log").read_text() for name in workers}
    # w1 and w2 split the 64 partitions, then give up a third of them to w3 (ceil(64/3) = 22 each)
    held = {name: [int(n) for n in re.findall(rf"worker {name} holds (\d+) partitions", log)]
            for name, log in logs.items()}
    assert 32 in held["w1"] and 32 in held["w2"], held
    assert min(held["w1"]) <= 22 and min(held["w2"]) <= 22 and 0 < held["w3"][0] <= 22, held
    shard_pages = {}
    for name in workers:
        with sqlite3.connect(tmp_path / "shards" / name / "crawl.db") as conn:
            shard_pages[name] = {url for (url,) in conn.execute("SELECT url FROM pages")}
    assert shard_pages["w3"], "the new worker crawled nothing"
    assert stored_urls(tmp_path) == expected
    report = sandbox.report(interval=0.4)
    assert report["violations"] == 0 and report["max_concurrency"] == 1, report["per_host"]
    assert fetched_twice(sandbox) == 0  # a partition handed over mid-crawl repeats nothing
