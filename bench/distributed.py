"""Distributed crawling on Redis: 1 worker against 2, and scrapy-redis's stock scheduler, same run.

Sandbox: 500 hosts, one seed per host, a 5 s interval, SECONDS per run (the bound is
what an ideal polite crawler fetches in that time, about hosts / interval pages/s;
``SandboxWeb.ideal_polite_fetches``). Each run gets a fresh redis-server on a free port.
Pages are counted on the sandbox's record within SECONDS of the run's first request;
violations come from the same record (gaps under the interval, two requests at once).

The two-worker run is made twice: on one Redis and on a Redis Cluster of 3 masters with a
replica each (``sandbox.servers.RedisClusterServers``). Measured from Redis's own counters:
commands and network bytes per crawled page, in all and per master; and each worker's
peak RSS and CPU seconds per page.

Then Redis memory, from ``used_memory``, for the sizing table of docs/distributed.md: a
queued URL and a host (10 M URLs over 1 M hosts pushed into a fresh Redis; the ready heap's
share from ``MEMORY USAGE``), a URL in flight (its lease and pending entry), a canonical
page in the near-duplicate index, a URL's revisit state, and the URL-seen Bloom chain from
its shape. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawlproj.distributed.dupefilter import bloom_shape  # noqa: E402
from crawlproj.distributed.frontier import RedisFrontier  # noqa: E402
from crawlproj.extensions.memory import rss_bytes  # noqa: E402
from sandbox.audit import pages_in_window  # noqa: E402
from sandbox.harness import PROJECT_DIR, SandboxProcess, crawl_command, with_peak_rss  # noqa: E402
from sandbox.servers import RedisServer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from politeness import scrapy_redis_settings  # noqa: E402

HOSTS, INTERVAL = 500, 5.0


def script_commands() -> set[str]:
    """The commands the frontier's Lua scripts call inside Redis (what a client did not send)."""
    from crawlproj.distributed import scripts

    text = "\n".join(v for v in vars(scripts).values() if isinstance(v, str))
    return {name.lower() for name in re.findall(r"redis\.call\('([A-Za-z_]+)'", text)} | {"bitfield", "bitfield_ro"}


def redis_counters(client: redis.Redis) -> tuple[int, int, int]:
    """(commands, script inner ones included; calls sent by clients; network bytes)."""
    stats, commands = client.info("stats"), client.info("commandstats")
    inner = script_commands()
    sent = sum(v["calls"] for k, v in commands.items() if k.removeprefix("cmdstat_") not in inner)
    return (stats["total_commands_processed"], sent,
            stats["total_net_input_bytes"] + stats["total_net_output_bytes"])


def master_clients(server) -> list[redis.Redis]:  # noqa: ANN001 - a RedisServer or RedisClusterServers
    """A plain client of each master (one Redis: itself)."""
    if hasattr(server, "masters_by_port"):
        return [redis.Redis(port=port) for port in sorted(server.masters_by_port())]
    return [redis.Redis.from_url(server.url)]


def cpu_seconds(pid: int) -> float:
    """User and system CPU of a process so far (0 when gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def wait_watching(procs: list[subprocess.Popen], timeout: float) -> list[dict]:
    """Wait for the workers, reading each one's RSS and CPU every half second: [{peak_rss, cpu}]."""
    watched = [{"peak_rss": 0, "cpu": 0.0} for _ in procs]
    deadline = time.monotonic() + timeout
    while any(proc.poll() is None for proc in procs):
        if time.monotonic() > deadline:
            raise TimeoutError("the workers did not finish")
        for proc, seen in zip(procs, watched):
            if proc.poll() is None:
                seen["peak_rss"] = max(seen["peak_rss"], rss_bytes(proc.pid))
                seen["cpu"] = max(seen["cpu"], cpu_seconds(proc.pid))
        time.sleep(0.5)
    return watched


def run(sandbox: SandboxProcess, workdir: Path, seconds: float, workers: int, settings: dict,
        cluster: bool = False, interval: float = INTERVAL) -> dict:
    sandbox.reset()
    if cluster:
        from sandbox.servers import RedisClusterServers

        servers = RedisClusterServers()
    else:
        servers = RedisServer()
    with servers as server:
        masters = master_clients(server)
        before = [redis_counters(client) for client in masters]
        base = {"HOST_RESOLVE": sandbox.host_resolve, "REDIS_URL": server.url, "CLOSESPIDER_TIMEOUT": seconds,
                "CONCURRENT_REQUESTS": 64, "LOG_LEVEL": "WARNING", "RENDER_MODE": "never",
                "STORE_URI": f"sqlite:///{workdir}/{{worker}}/crawl.db", **settings}
        procs = [subprocess.Popen(crawl_command("web", {"seeds": sandbox.seeds_file}, {**base, "WORKER_ID": f"w{i}"}),
                                  cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for i in range(workers)]
        watched = wait_watching(procs, seconds * 3 + 120)
        after = [redis_counters(client) for client in masters]
    records = sandbox.records()
    pages = pages_in_window(records, seconds)
    fetched = max(1, sum(1 for r in records if r.path != "/robots.txt" and r.status == 200))
    report = sandbox.report(interval, basis="idle")
    per_master = [tuple(a - b for a, b in zip(later, earlier)) for earlier, later in zip(before, after)]
    out = {"pages": pages, "pages_per_s": round(pages / seconds, 2), "violations": report["violations"],
           "min_gap": report["min_gap"], "max_concurrency": report["max_concurrency"],
           "redis_commands_per_page": round(sum(m[0] for m in per_master) / max(1, pages), 1),
           "redis_calls_per_page": round(sum(m[1] for m in per_master) / max(1, pages), 2),
           "redis_bytes_per_page": round(sum(m[2] for m in per_master) / max(1, pages)),
           "worker_peak_rss_mb": [round(w["peak_rss"] / 2**20) for w in watched],
           # every page the workers fetched, not only those within SECONDS: the CPU is the whole run's
           "worker_cpu_ms_per_page": round(1000 * sum(w["cpu"] for w in watched) / fetched, 2)}
    if cluster:
        out["masters"] = len(masters)
        out["per_master"] = {"commands_per_page": [round(m[0] / max(1, pages), 1) for m in per_master],
                             "bytes_per_page": [round(m[2] / max(1, pages)) for m in per_master]}
    return out


class _Spider:
    """Stands in for the crawl's spider: its requests name ``parse`` and ``on_error``, as a crawl's links do."""

    name = "web"

    def parse(self, response):  # noqa: ANN001, ANN201
        pass

    def on_error(self, failure):  # noqa: ANN001, ANN201
        pass


def used_memory(client: redis.Redis) -> int:
    return client.info("memory")["used_memory"]


def sample_url(i: int, hosts: int) -> tuple[str, str]:
    """The ``i``-th of a crawl's links over ``hosts`` hosts (about 60 characters): (host, URL)."""
    host = f"www.site{i % hosts}.example.org"
    return host, f"http://{host}/articles/2026/{i % 12 + 1:02d}/story-{i // hosts}.html"


def queued_bytes(urls: int, hosts: int, long_form: bool = False) -> dict:
    """Redis memory of the queue, from Redis's own ``used_memory``: ``urls`` links like a crawl's
    (GET, depth, CGI hops; URLs of about 60 characters) over ``hosts`` hosts, pushed into a
    fresh Redis. One link per host first (each host's keys are made then), then the rest:
    bytes per queued URL, and per host beyond its URLs; of a host's bytes, the ready heap's
    (its member in a partition's ``ready`` sorted set) from ``MEMORY USAGE``."""
    import scrapy

    from crawlproj.frontier.entry import request_entry

    from crawlproj.distributed import frontier as frontier_module

    spider = _Spider()
    if long_form:  # every entry pickled, as every entry was before the lean form
        frontier_module.pack = lambda entry, key: b"P" + __import__("pickle").dumps(entry, protocol=5)
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        frontier = RedisFrontier(client, "m", "w", partitions=64)
        lengths, lean = [], 0

        def push(i: int) -> None:
            host, url = sample_url(i, hosts)
            entry = request_entry(scrapy.Request(url, callback=spider.parse, errback=spider.on_error,
                                                 meta={"depth": 3, "cgi_hops": 0}), spider)
            lengths.append(len(url)) if len(lengths) < 10_000 else None
            frontier.push(host, entry)

        client.config_set("save", "")
        before = used_memory(client)
        for i in range(hosts):
            push(i)
        frontier.flush()
        first = used_memory(client) - before
        for i in range(hosts, urls):
            push(i)
        frontier.flush()
        total = used_memory(client) - before
        heap = sum(client.memory_usage(f"{tag}:ready", samples=0) or 0 for tag in frontier._tags)
        lean = frontier.packed[1]
    if long_form:
        from crawlproj.distributed.entries import pack

        frontier_module.pack = pack
    per_url = (total - first) / max(1, urls - hosts)
    return {"urls": urls, "hosts": hosts, "url_chars_mean": round(sum(lengths) / len(lengths), 1),
            "lean_share": round(lean / urls, 4), "redis_bytes": total,
            "bytes_per_url": round(total / urls, 1), "bytes_per_url_beyond_its_host": round(per_url, 1),
            "bytes_per_host": round(first / hosts - per_url, 1),
            "heap_bytes_per_host": round(heap / hosts, 1),
            "seen_bytes_per_url": round(seen_chain_bytes(urls) / urls, 2)}


def seen_chain_bytes(urls: int, partitions: int = 64, capacity: int = 1_000_000, error_rate: float = 0.001) -> int:
    """Bytes of the URL-seen Bloom chains holding ``urls`` URLs spread over ``partitions``
    (the scripts' shape: filter i of a partition for c0 * 2^i URLs at error / 2^(i+1))."""
    first, per, bits, held, i = max(1000, capacity // partitions), urls / partitions, 0, 0, 0
    while i == 0 or held < per:
        bits += min(bloom_shape(first * 2**i, error_rate / 2 ** (i + 1))[0], 2**32 - 1)
        held += first * 2**i
        i += 1
    return round(bits / 8 * partitions)


def seen_measured(urls: int, hosts: int) -> dict:
    """The URL-seen chains' bytes (``STRLEN`` of every bitmap) after ``urls`` URLs were pushed
    with the dupefilter marking them, beside what :func:`seen_chain_bytes` says of that many."""
    from crawlproj.distributed.dupefilter import RedisBloomDupeFilter

    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        frontier = RedisFrontier(client, "m", "w", partitions=64)
        frontier.seen = RedisBloomDupeFilter(client, "m", 1_000_000, 0.001, 64)
        for i in range(urls):
            host, url = sample_url(i, hosts)
            frontier.push(host, {"url": url, "method": "GET", "body": b"", "meta": {"depth": 1}})
        frontier.flush()
        measured = sum(client.strlen(key) for key in client.scan_iter("{m:*}:seen:*", count=1000))
    return {"urls": urls, "bytes": measured, "shape_bytes": seen_chain_bytes(urls)}


def inflight_bytes(n: int) -> float:
    """Bytes per URL in flight: its host's lease and its pending entry (``n`` URLs over ``n``
    hosts pushed and then all popped by one worker), against the empty Redis."""
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        frontier = RedisFrontier(client, "m", "w", partitions=64, shared=True, batch=256)
        before = used_memory(client)
        for i in range(n):
            host, url = sample_url(i, n)
            frontier.push(host, {"url": url, "method": "GET", "body": b"", "meta": {"depth": 1}})
        frontier.flush()
        popped = 0
        while frontier.pop(time.monotonic()) is not None:
            popped += 1
        return round((used_memory(client) - before) / max(1, popped), 1)


def by_structure(client: redis.Redis, patterns: dict[str, str], count: int) -> dict[str, float]:
    """Bytes per item of each structure, from ``MEMORY USAGE`` of every key its pattern matches."""
    return {name: round(sum(client.memory_usage(key, samples=0) or 0
                            for key in client.scan_iter(pattern, count=1000)) / count, 1)
            for name, pattern in patterns.items()}


def near_duplicate_bytes(pages: int) -> dict:
    """Bytes per canonical page in the shared near-duplicate index (default shape: 128
    permutations; its record and one id in each LSH band), laid out for ``pages``: Redis's
    ``used_memory`` before and after, and ``MEMORY USAGE`` of each structure's keys."""
    import numpy as np

    from crawlproj.content.near_duplicates import Fingerprint
    from crawlproj.distributed.near_duplicates import RedisNearDuplicateIndex

    rng = np.random.default_rng(1)
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        index = RedisNearDuplicateIndex(client, "m", capacity=pages)
        before = used_memory(client)
        for i in range(pages):
            digest = hashlib.sha256(str(i).encode()).hexdigest()
            values = rng.integers(0, 2**32, index.num_perm, dtype=np.uint64).astype(np.uint32)
            index.add(sample_url(i, max(1, pages // 10))[1], Fingerprint(digest, values, 5000))
        total = round((used_memory(client) - before) / pages, 1)
        return {"bytes_per_page": total,
                **by_structure(client, {"records": "m:nd:p:*", "bands": "m:nd:b:*"}, pages)}


def revisit_bytes(urls: int) -> dict:
    """Bytes per URL of the incremental crawl's revisit state (its packed state, due slot and
    host set), laid out for ``urls``."""
    from crawlproj.distributed.revisit_queue import RedisRevisitQueue
    from crawlproj.revisit.estimator import PageHistory
    from crawlproj.revisit.state import UrlState

    now = time.time()
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        queue = RedisRevisitQueue(client, "m", 64, capacity=urls)
        before = used_memory(client)
        for i in range(urls):
            host, url = sample_url(i, max(1, urls // 10))
            # due over the next month, as a crawl's pages fall due
            queue.put(UrlState(url, host, PageHistory(now - 86400, now, 86400.0, 1, 3600.0), 43200.0,
                               now + i * 2_592_000 / urls, "estimate", depth=3, rate=2e-5,
                               content_hash=hashlib.sha256(url.encode()).hexdigest(), etag=f'"{i:x}-5f3a"',
                               last_modified="Wed, 21 Oct 2026 07:28:00 GMT", visits=2, source="visits"))
            if i % 1000 == 999:
                queue.commit()
        queue.commit()
        total = round((used_memory(client) - before) / urls, 1)
        return {"bytes_per_url": total,
                **by_structure(client, {"states": "m:rv:s:*", "due": "{m:rv:*}:*", "hosts": "m:rv:h:*"}, urls)}


MASTER_GB = 32  # data per master: a 48 GB machine, leaving room for fork copy-on-write and buffers


def sizing(queued: dict, per_inflight: float, per_canonical: float, per_revisit: float) -> dict:
    """The sizing table, from the measured figures: the frontier's Redis memory per structure
    for 10 M, 100 M and 1 B queued URLs over 1 M and 10 M hosts (the URL-seen chains hold as
    many URLs: a crawl has seen at least what it queued; leases for 100 workers with 64
    requests each in flight), and what grows with pages fetched (the near-duplicate index per
    canonical page, the revisit state per URL) for as many pages; each with the masters of
    MASTER_GB it takes."""
    frontier, fetched = [], []
    for urls in (10_000_000, 100_000_000, 1_000_000_000):
        for hosts in (1_000_000, 10_000_000):
            gb = {"queues": (urls * queued["bytes_per_url_beyond_its_host"]
                             + hosts * (queued["bytes_per_host"] - queued["heap_bytes_per_host"])) / 1e9,
                  "heap": hosts * queued["heap_bytes_per_host"] / 1e9,
                  "leases": 100 * 64 * per_inflight / 1e9,
                  "bloom": seen_chain_bytes(urls) / 1e9}
            total = sum(gb.values())
            frontier.append({"urls": urls, "hosts": hosts, **{k: round(v, 2) for k, v in gb.items()},
                             "gb": round(total, 1), "masters": max(1, math.ceil(total / MASTER_GB))})
        gb = {"near_duplicates": urls * per_canonical / 1e9, "revisit": urls * per_revisit / 1e9}
        total = sum(gb.values())
        fetched.append({"pages": urls, **{k: round(v, 1) for k, v in gb.items()}, "gb": round(total, 1),
                        "masters": max(1, math.ceil(total / MASTER_GB))})
    return {"frontier": frontier, "fetched": fetched}


def memory_figures(urls: int, hosts: int, items: int) -> dict:
    """Redis memory of each structure (``items`` of each smaller one), and the sizing table."""
    queued = queued_bytes(urls, hosts)
    per_inflight, near, revisit = inflight_bytes(items), near_duplicate_bytes(items), revisit_bytes(items)
    per_canonical, per_revisit = near["bytes_per_page"], revisit["bytes_per_url"]
    return {"queued": queued,
            "queued_long_form": queued_bytes(urls // 10, hosts // 10, long_form=True),  # as before the lean form
            "seen_measured": seen_measured(items * 10, items),
            "inflight_bytes_per_url": per_inflight, "near_duplicate_bytes_per_page": per_canonical,
            "near_duplicate_by_structure": near, "revisit_bytes_per_url": per_revisit,
            "revisit_by_structure": revisit, "shared_bytes_per_page": round(per_canonical + per_revisit, 1),
            "master_gb": MASTER_GB,
            "sizing": sizing(queued, per_inflight, per_canonical, per_revisit)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--interval", type=float, default=INTERVAL, help="MIN_INTERVAL (the peer's DOWNLOAD_DELAY)")
    parser.add_argument("--only-one", action="store_true", help="only the one-worker run (for tuning)")
    parser.add_argument("--only-single", action="store_true",
                        help="only the runs on one Redis (to compare two versions of the code)")
    parser.add_argument("--queued", type=int, default=10_000_000, help="queued URLs for the memory figure")
    parser.add_argument("--queued-hosts", type=int, default=1_000_000, help="their hosts")
    parser.add_argument("--items", type=int, default=20_000,
                        help="pages, URLs in flight and revisit states for their memory figures")
    parser.add_argument("--only-memory", "--only-queued", action="store_true", help="only the memory figures")
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, the same code paths (make test)")
    opts = parser.parse_args()
    if opts.smoke:
        opts.seconds, opts.queued, opts.queued_hosts, opts.items = 6.0, 20_000, 2_000, 500
        # Scrapy's close waits out every request its download slots hold, a delay each: at 5 s
        # the peer took half a minute to stop.
        opts.interval = 1.0
    if opts.only_memory:
        print(json.dumps(with_peak_rss({"bench": "distributed", **memory_figures(opts.queued, opts.queued_hosts, opts.items)})))
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-distributed-"))
    seconds = opts.seconds
    ours = {"PROFILE": "sandbox", "SCHEDULER": "crawlproj.distributed.scheduler.DistributedScheduler",
            "DUPEFILTER_CLASS": "crawlproj.distributed.dupefilter.RedisBloomDupeFilter", "MIN_INTERVAL": opts.interval,
            "FRONTIER_PARTITIONS": 64, "WORKER_HEARTBEAT": 1.0, "WORKER_TTL": 10}
    started = time.monotonic()
    with SandboxProcess("--hosts", str(HOSTS), "--pages", str(int(seconds / opts.interval) + 10), "--no-robots-mix",
                        "--no-japanese", "--cross-host", "0", seeds_file=tmp / "seeds.txt") as sandbox:
        web = sandbox.web
        bound = web.ideal_polite_fetches(web.seeds(), opts.interval, seconds) / seconds
        one = run(sandbox, tmp / "one", seconds, 1, ours, interval=opts.interval)
        if opts.only_one:
            print(json.dumps(with_peak_rss({"bench": "distributed", "bound_pages_per_s": round(bound, 2), "one_worker": one})))
            return
        two = run(sandbox, tmp / "two", seconds, 2, ours, interval=opts.interval)
        peer = run(sandbox, tmp / "scrapy-redis", seconds, 1,
                   {**{k: v for k, v in scrapy_redis_settings("").items() if k != "REDIS_URL"},
                    "DOWNLOAD_DELAY": opts.interval,
                    "CONCURRENT_REQUESTS_PER_DOMAIN": 1}, interval=opts.interval)
        cluster = None if opts.only_single else run(sandbox, tmp / "cluster", seconds, 2, ours, cluster=True,
                                                         interval=opts.interval)
    out = {
        "bench": "distributed", "hosts": HOSTS, "interval_s": opts.interval, "seconds": seconds,
        "workers": 2,
        "pages_per_s": two["pages_per_s"],
        "bound_pages_per_s": round(bound, 2),
        "efficiency": round(two["pages_per_s"] / bound, 3),
        "violations": two["violations"],
        "max_concurrency": two["max_concurrency"],
        "one_worker": {**one, "efficiency": round(one["pages_per_s"] / bound, 3)},
        "two_workers": two,
        "scrapy_redis_pages_per_s": peer["pages_per_s"],
        "scrapy_redis_violations": peer["violations"],
        "scrapy_redis_peak_rss_mb": peer["worker_peak_rss_mb"][0],
        "ratio_vs_scrapy_redis": round(two["pages_per_s"] / peer["pages_per_s"], 2) if peer["pages_per_s"] else None,
        "redis_commands_per_page": two["redis_commands_per_page"],
        "redis_calls_per_page": two["redis_calls_per_page"],
        "redis_bytes_per_page": two["redis_bytes_per_page"],
        "peak_rss_mb": max(two["worker_peak_rss_mb"]),
    }
    if cluster is not None:
        out["cluster"] = {**cluster, "efficiency": round(cluster["pages_per_s"] / bound, 3)}
        out["cluster_violations"] = cluster["violations"]
        out["cluster_efficiency"] = out["cluster"]["efficiency"]
    if not opts.only_single:
        out.update(memory_figures(opts.queued, opts.queued_hosts, opts.items))
        out["redis_queued_bytes_per_url"] = out["queued"]["bytes_per_url"]
    out["wall_seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
