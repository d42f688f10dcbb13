"""A broad crawl: a synthetic web of 250,000 hosts on loopback, WORKERS=2 over a Redis Cluster.

One sandbox server answers for every host name (``HOST_RESOLVE=*.sandbox.test=127.0.0.1``):
hosts' sizes follow a power law (``--power-law``), so the links out of a host do too, and half
the links of a page go to other hosts, drawn uniformly. (Drawn by a Zipf law over hosts, as
``sandbox --importance`` does, a link would reach the 100,000th host about once in 5 million
links: most of the web would never be seen.) Hosts seen grow as 1 - exp(-links/hosts): about
93% of the hosts after 2.65 cross-host links a host: 200,000 hosts seen takes a web of more
(250,000 by default: a web of 200,000 had shown 185,782 after 177,215 pages).
The crawl starts from ``--seeds`` hosts' root pages and discovers the rest. It runs
``scrapy crawl web -s WORKERS=2`` over a Redis Cluster of 3 masters with a replica each
(``sandbox.servers.RedisClusterServers``), for ``--seconds``. ``--near-duplicates local`` (the
default here) keeps each worker's near-duplicate index on its own disk, beside its store: a
host's pages all go to the worker holding its partition, so near-duplicates within a host are
all found, across hosts only when one worker holds both, and Redis keeps only the queue and
the revisit state;
``shared`` is the distributed profile's index in Redis.

Every 10 s the bench reads the server's record: hosts fetched (their robots.txt asked for),
hosts seen (the hosts of every link on the pages fetched so far, from the generated graph:
what the crawl has queued or met), and each worker's resident set; it keeps the RSS at the
first sample past 10 k, 100 k and 200 k hosts seen. At the end: Redis's memory by structure
(``MEMORY USAGE`` of every key on every master, grouped by key shape) per page fetched and
per URL queued, politeness violations on the server's record, and pages per second per core
(pages over the workers' CPU seconds). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawlproj.extensions.memory import rss_bytes  # noqa: E402
from sandbox.harness import PROJECT_DIR, SandboxProcess, crawl_command, with_peak_rss  # noqa: E402
from sandbox.servers import RedisClusterServers  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from distributed import cpu_seconds, master_clients  # noqa: E402

#: Key shapes of the shared state, by structure (the prefix is the crawl's REDIS_PREFIX).
STRUCTURES = (("near_duplicate_records", r":nd:p:"), ("near_duplicate_bands", r":nd:b:"),
              ("near_duplicate_digests", r":nd:d:"), ("revisit", r":rv:"), ("url_seen", r"\}:seen:"),
              ("frontier_queues", r"\}:q:"), ("frontier_ready_heap", r"\}:ready"), ("frontier_other", r"^\{"))
HOST_MARKS = (10_000, 100_000, 200_000)


def children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (the workers of a ``WORKERS`` crawl are the main process's children)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = [int(k) for k in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except OSError:
            kids = []
        found.extend(kids)
        todo.extend(kids)
    return found


def worker_pids(main: int) -> list[int]:
    """The crawl's worker processes (a ``scrapy`` command line among the main process's descendants)."""
    out = []
    for pid in children(main):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"WORKER_INDEX" in c or b"worker" in c for c in cmd) and any(b"scrapy" in c for c in cmd):
            out.append(pid)
    return out or children(main)[:2]


class HostsSeen:
    """Hosts of the links on the pages fetched so far, from the generated graph."""

    def __init__(self, web, seeds: list[int]) -> None:  # noqa: ANN001 - a SandboxWeb
        self.web, self.seen, self.done = web, set(seeds), set()
        self.host_of = re.compile(r"^https?://h(\d+)\.")

    def add(self, records) -> None:  # noqa: ANN001
        for r in records:
            if r.status != 200 or r.path == "/robots.txt" or (r.host, r.path) in self.done:
                continue
            self.done.add((r.host, r.path))
            host = self.web.host_index(r.host)
            k = self.web.page_index(host, r.path) if host is not None else None
            if k is None:
                continue
            for link in self.web.page(host, k).links:
                m = self.host_of.match(link.target)
                if m:
                    self.seen.add(int(m.group(1)))


def redis_by_structure(masters: list[redis.Redis]) -> dict[str, int]:
    """Bytes of every key on the masters (``MEMORY USAGE``), summed by :data:`STRUCTURES`."""
    out: dict[str, int] = defaultdict(int)
    for client in masters:
        for key in client.scan_iter(count=2000):
            name = key.decode("utf-8", "replace")
            kind = next((k for k, pattern in STRUCTURES if re.search(pattern, name)), "other")
            out[kind] += client.memory_usage(key, samples=0) or 0
    return dict(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=250_000)
    parser.add_argument("--pages", type=int, default=5, help="mean pages a host (power law)")
    parser.add_argument("--power-law", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=200, help="hosts whose root page seeds the crawl")
    parser.add_argument("--seconds", type=float, default=1800.0)
    parser.add_argument("--interval", type=float, default=1.0, help="MIN_INTERVAL a host")
    parser.add_argument("--capacity", type=int, default=0,
                        help="SHARED_STATE_CAPACITY (0: the pages the run may fetch, at 80 a second)")
    parser.add_argument("--near-duplicates", choices=("local", "shared"), default="local",
                        help="each worker's index on its own disk (its hosts' pages), or one in Redis for all")
    parser.add_argument("--smoke", action="store_true", help="2,000 hosts for 40 s (make test)")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="another setting for the crawl (repeatable)")
    opts = parser.parse_args()
    if opts.smoke:
        opts.hosts, opts.seeds, opts.seconds = 2000, 20, 40.0
    tmp = Path(tempfile.mkdtemp(prefix="bench-broad-"))
    started = time.monotonic()
    with SandboxProcess("--hosts", str(opts.hosts), "--pages", str(opts.pages), "--power-law", str(opts.power_law),
                        "--cross-host", "0.5", "--out-links", "6", "--no-japanese", "--page-bytes", "3000",
                        seeds_file=tmp / "all-seeds.txt") as sandbox, RedisClusterServers() as cluster:
        web = sandbox.web
        seed_hosts = list(range(opts.seeds))
        (tmp / "seeds.txt").write_text("".join(web.origin(i) + "/\n" for i in seed_hosts))
        settings = {"WORKERS": 2, "REDIS_URL": cluster.url, "HOST_RESOLVE": sandbox.host_resolve,
                    "CLOSESPIDER_TIMEOUT": opts.seconds, "MIN_INTERVAL": opts.interval, "RENDER_MODE": "never",
                    "CONCURRENT_REQUESTS": 64, "LOG_LEVEL": "WARNING", "WARC_ENABLED": False,
                    "SHARED_STATE_CAPACITY": opts.capacity or max(1000, int(80 * opts.seconds)), "STORE_URI": f"sqlite:///{tmp}/crawl.db",
                    "STATS_FILE": str(tmp / "stats.json")}
        settings.update(item.split("=", 1) for item in opts.set)
        if opts.near_duplicates == "local":
            settings["NEAR_DUPLICATES_INDEX_CLASS"] = "crawlproj.content.near_duplicates_pipeline.LocalNearDuplicateIndex"
        main_proc = subprocess.Popen(crawl_command("web", {"seeds": str(tmp / "seeds.txt")}, settings),
                                     cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=open(tmp / "crawl.log", "w"))
        seen = HostsSeen(web, seed_hosts)
        marks: dict[str, list[int]] = {}
        peaks: dict[int, int] = {}
        cpu: dict[int, float] = {}
        samples = []
        deadline = time.monotonic() + opts.seconds * 2 + 300
        while main_proc.poll() is None:
            if time.monotonic() > deadline:
                main_proc.terminate()
                break
            time.sleep(10)
            pids = worker_pids(main_proc.pid)
            rss = [rss_bytes(p) for p in pids]
            for p, value in zip(pids, rss):
                peaks[p] = max(peaks.get(p, 0), value)
                cpu[p] = max(cpu.get(p, 0.0), cpu_seconds(p))
            records = sandbox.records()
            seen.add(records)
            fetched_hosts = len({r.host for r in records if r.path == "/robots.txt"})
            samples.append({"t": round(time.monotonic() - started), "hosts_seen": len(seen.seen),
                            "hosts_fetched": fetched_hosts, "rss_mb": [round(v / 2**20) for v in rss]})
            for mark in HOST_MARKS:
                if len(seen.seen) >= mark and str(mark) not in marks:
                    marks[str(mark)] = [round(v / 2**20) for v in rss]
        records = sandbox.records()
        seen.add(records)
        report = sandbox.report(opts.interval, basis="idle")
        masters = master_clients(cluster)
        by_structure = redis_by_structure(masters)
        queued = 0
        for client in masters:
            for key in client.scan_iter(match="*}:q:*", count=2000):
                queued += client.llen(key) if client.type(key) == b"list" else 0
    pages = sum(1 for r in records if r.path != "/robots.txt" and r.status == 200)
    frontier = sum(v for k, v in by_structure.items() if k.startswith("frontier") or k == "url_seen")
    shared = sum(v for k, v in by_structure.items() if k.startswith("near_duplicate") or k == "revisit")
    workers_cpu = sum(cpu.values())
    stats = json.loads((tmp / "stats.json").read_text()) if (tmp / "stats.json").exists() else {}
    local_index = sum(f.stat().st_size for f in tmp.rglob("*near_duplicates*") if f.is_file())  # in the shards
    out = {"bench": "broad", "settings": dict(item.split("=", 1) for item in opts.set), "hosts": opts.hosts, "seconds": opts.seconds, "workers": 2, "masters": len(masters),
           "pages": pages, "hosts_seen": len(seen.seen),
           "hosts_fetched": len({r.host for r in records if r.path == "/robots.txt"}),
           "worker_rss_mb_at_hosts_seen": marks, "worker_peak_rss_mb": [round(v / 2**20) for v in peaks.values()],
           "redis_bytes_by_structure": by_structure,
           "near_duplicates": opts.near_duplicates,
           "redis_shared_bytes_per_fetched_page": round(shared / max(1, pages), 1),
           "local_near_duplicate_bytes_per_fetched_page": round(local_index / max(1, pages), 1),
           "redis_frontier_bytes_per_queued_url": round(frontier / max(1, queued), 1), "queued_urls": queued,
           "violations": report["violations"], "max_concurrency": report["max_concurrency"],
           "pages_per_s": round(pages / opts.seconds, 2),
           "pages_per_s_per_core": round(pages / workers_cpu, 2) if workers_cpu else None,
           "gc_full_of_one_worker": {k.split("/", 1)[1]: round(v, 3) if isinstance(v, float) else v
                                     for k, v in stats.items() if k.startswith("gc/full_")},
           "samples": samples[:: max(1, len(samples) // 12)], "wall_seconds": round(time.monotonic() - started)}
    print(json.dumps(with_peak_rss(out)))


if __name__ == "__main__":
    main()
