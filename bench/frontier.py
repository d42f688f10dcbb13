"""Frontier throughput and memory: enqueue + dequeue operations/s and RSS per queued URL.

For each size (1 M and 10 M URLs over 100 k hosts by default) a fresh child
process builds the disk-spilling two-tier frontier exactly as the scheduler
does (`FRONTIER_*` defaults, spill queues), enqueues N request dicts shaped
like `Request.to_dict()` output, reads RSS, then dequeues everything under a
simulated clock: each dequeue advances it by 1 ms and a host goes again 1 s
after its fetch, so about 1,000 hosts are active, as in a crawl at 1,000
pages/s. Nothing is on the network.

`ops_per_s` counts N enqueues plus N dequeues (with their releases) over the
wall time of both phases. `rss_bytes_per_url` is (RSS with all N queued -
RSS before) / N. Peer: Scrapy's own disk-backed scheduler queue
(`ScrapyPriorityQueue` over `PickleFifoDiskQueue`, as used with JOBDIR) on
the same URLs at the smaller size. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def entry(i: int, hosts: int) -> tuple[str, dict]:
    host = f"host{i % hosts}.example"
    url = f"http://{host}/section/{i // hosts}/page-{i}.html"
    return host, {
        "url": url, "callback": "parse", "errback": "on_error", "method": "GET", "headers": {},
        "body": b"", "cookies": {}, "meta": {"depth": i % 7}, "encoding": "utf-8", "priority": 0,
        "dont_filter": False, "flags": [], "cb_kwargs": {},
    }


def run_ours(n: int, hosts: int, workdir: str) -> dict:
    from scrapy.settings import Settings

    from crawlproj import defaults as base
    from crawlproj.frontier.spill import SegmentStore, spill_factory
    from crawlproj.frontier.tiers import TwoTierFrontier

    s = Settings()
    s.setmodule(base)
    store = SegmentStore(os.path.join(workdir, "spill"))
    frontier = TwoTierFrontier(
        levels=s.getint("FRONTIER_LEVELS"), active_target=3 * s.getint("CONCURRENT_REQUESTS"),
        max_active=s.getint("FRONTIER_MAX_ACTIVE_KEYS"), bias=s.getfloat("FRONTIER_BIAS"),
        queue_factory=spill_factory(store, s.getint("FRONTIER_FRONT_BUFFER"), s.getint("FRONTIER_BACK_BUFFER")),
    )
    before = rss_bytes()
    t0 = time.perf_counter()
    for i in range(n):
        key, e = entry(i, hosts)
        frontier.push(key, e, e["meta"]["depth"])
    t1 = time.perf_counter()
    queued_rss = rss_bytes()
    disk_bytes = store.disk_bytes
    now, popped, peak_active = 0.0, 0, 0
    while popped < n:
        got = frontier.pop(now)
        if got is None:
            now = frontier.next_due()
            continue
        popped += 1
        frontier.release(got[0], now + 1.0)
        now += 0.001
        if popped % 65536 == 0:
            peak_active = max(peak_active, len(frontier.back))
    t2 = time.perf_counter()
    store.close()
    return {
        "urls": n, "hosts": hosts,
        "enqueue_per_s": round(n / (t1 - t0)), "dequeue_per_s": round(n / (t2 - t1)),
        "ops_per_s": round(2 * n / (t2 - t0)),
        "rss_bytes_per_url": round((queued_rss - before) / n, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "spill_bytes": disk_bytes, "peak_active_keys": peak_active,
    }


def run_scrapy_disk_queue(n: int, hosts: int, workdir: str) -> dict:
    """Scrapy's JOBDIR queue: pickled Request dicts in a disk FIFO per priority."""
    from scrapy.pqueues import ScrapyPriorityQueue
    from scrapy.squeues import PickleFifoDiskQueue
    from scrapy.utils.test import get_crawler

    crawler = get_crawler()
    queue = ScrapyPriorityQueue.from_crawler(crawler, PickleFifoDiskQueue, os.path.join(workdir, "scrapy-q"))
    from scrapy import Request

    before = rss_bytes()
    t0 = time.perf_counter()
    for i in range(n):
        _, e = entry(i, hosts)
        queue.push(Request(e["url"], meta=e["meta"], priority=-e["meta"]["depth"]))
    t1 = time.perf_counter()
    queued_rss = rss_bytes()
    for _ in range(n):
        queue.pop()
    t2 = time.perf_counter()
    queue.close()
    return {"urls": n, "ops_per_s": round(2 * n / (t2 - t0)),
            "rss_bytes_per_url": round((queued_rss - before) / n, 1)}


def child(kind: str, n: int, hosts: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-frontier-") as workdir:
        return (run_ours if kind == "ours" else run_scrapy_disk_queue)(n, hosts, workdir)


def spawn(kind: str, n: int, hosts: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, "--urls", str(n), "--hosts", str(hosts)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="comma-separated URL counts")
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--urls", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child", choices=("ours", "scrapy"), help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, the same code paths (make test)")
    opts = parser.parse_args()
    if opts.smoke:
        opts.sizes, opts.hosts = "20000", 1000
    if opts.child:
        print(json.dumps(child(opts.child, opts.urls, opts.hosts)))
        return
    sizes = [int(x) for x in opts.sizes.split(",")]
    runs = {n: spawn("ours", n, opts.hosts) for n in sizes}
    largest = runs[sizes[-1]]
    peer = spawn("scrapy", sizes[0], opts.hosts)
    ours_small = runs[sizes[0]]
    print(json.dumps({"bench": "frontier",
        "ops_per_s": largest["ops_per_s"], "rss_bytes_per_url": largest["rss_bytes_per_url"],
        "urls": largest["urls"], "hosts": opts.hosts, "peak_rss_mb": largest["peak_rss_mb"],
        "runs": list(runs.values()),
        "scrapy_disk_queue": peer,
        "ops_ratio_vs_scrapy_disk_queue": round(ours_small["ops_per_s"] / peer["ops_per_s"], 2),
    }))


if __name__ == "__main__":
    main()
