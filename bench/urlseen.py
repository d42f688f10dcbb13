"""URL-seen test: bytes per URL, false-positive rate and operations/s at 10 M URLs.

Each filter runs in a fresh child process over the same URLs: N distinct
canonical URLs over 100 k hosts are offered once each (every answer must be
"new", and a "seen" there is a false positive too), then 1 M URLs that were
never added are asked (each "seen" is a false positive). Requests are built
outside the timed section, in batches, so the figures are the filter's own.

Filters:
* ours, sized to the crawl (``URLSEEN_CAPACITY`` = N): the headline figures;
* ours on the default capacity (1 M), grown by doubling to N;
* Scrapy's default ``RFPDupeFilter`` (a set of SHA1 fingerprints): the peer.

`bytes_per_url` is the structure's own size (the Bloom bit arrays; the set
and its fingerprint objects for RFPDupeFilter); `rss_bytes_per_url` is the
process's RSS growth, which also counts allocator fragmentation. Prints one
JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.harness import with_peak_rss  # noqa: E402

BATCH = 100_000


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def url(i: int, hosts: int, salt: str = "") -> str:
    return f"http://host{i % hosts}.example/{salt}section/{i // hosts % 97}/page-{i}.html"


def build(kind: str, n: int):
    from scrapy.utils.test import get_crawler

    if kind == "rfp":
        from scrapy.dupefilters import RFPDupeFilter

        return RFPDupeFilter.from_crawler(get_crawler())
    from crawlproj.frontier.urlseen import BloomDupeFilter

    capacity = n if kind == "bloom_sized" else 1_000_000
    return BloomDupeFilter(capacity, 0.001, None)


def contains(kind: str, df):
    """Membership without adding (a probe must not fill the filter)."""
    if kind == "rfp":
        return lambda request: df._fingerprint(request) in df._fingerprints
    from crawlproj.frontier.urlseen import url_key

    return lambda request: url_key(request) in df.bloom


def run(kind: str, n: int, hosts: int, probes: int) -> dict:
    from scrapy import Request

    df = build(kind, n)
    warm = [Request(url(i, hosts, salt="warm/")) for i in range(BATCH)]
    del warm  # the allocator keeps that memory: batches reuse it, so RSS growth is the filter's
    before = rss_bytes()
    elapsed, false_new = 0.0, 0
    for start in range(0, n, BATCH):
        batch = [Request(url(i, hosts)) for i in range(start, min(n, start + BATCH))]
        t0 = time.perf_counter()
        for request in batch:
            false_new += df.request_seen(request)
        elapsed += time.perf_counter() - t0
        del batch  # RSS growth must be the filter's, not the last batch of requests
    grown = rss_bytes() - before
    false_hits, seen = 0, contains(kind, df)
    for start in range(0, probes, BATCH):
        batch = [Request(url(i, hosts, salt="never/")) for i in range(start, min(probes, start + BATCH))]
        t0 = time.perf_counter()
        for request in batch:
            false_hits += seen(request)
        elapsed += time.perf_counter() - t0
    result = {
        "filter": kind, "urls": n,
        "ops_per_s": round((n + probes) / elapsed),
        "false_positive_rate": round(false_hits / probes, 6),
        "false_positives_while_adding": false_new,
        "rss_bytes_per_url": round(grown / n, 2),
    }
    if kind != "rfp":
        result["bytes_per_url"] = round(df.bloom.bytes / n, 3)
        result["filters"] = len(df.bloom.filters)
    else:  # the set and its fingerprints (RSS growth also counts allocator fragmentation)
        fps = df._fingerprints
        size = sys.getsizeof(fps) + sum(sys.getsizeof(fp) for fp in fps)
        result["bytes_per_url"] = round(size / n, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=10_000_000)
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--probes", type=int, default=1_000_000)
    parser.add_argument("--child", choices=("bloom_sized", "bloom_grown", "rfp"), help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, the same code paths (make test)")
    opts = parser.parse_args()
    if opts.smoke:
        opts.urls, opts.hosts, opts.probes = 20_000, 1000, 10_000
    if opts.child:
        print(json.dumps(run(opts.child, opts.urls, opts.hosts, opts.probes)))
        return
    results = {}
    for kind in ("bloom_sized", "bloom_grown", "rfp"):
        out = subprocess.run([sys.executable, __file__, "--child", kind, "--urls", str(opts.urls),
                              "--hosts", str(opts.hosts), "--probes", str(opts.probes)],
                             check=True, capture_output=True, text=True)
        results[kind] = json.loads(out.stdout.strip().splitlines()[-1])
    ours, grown, rfp = results["bloom_sized"], results["bloom_grown"], results["rfp"]
    print(json.dumps(with_peak_rss({"bench": "urlseen",
        "bytes_per_url": ours["bytes_per_url"], "false_positive_rate": ours["false_positive_rate"],
        "ops_per_s": ours["ops_per_s"], "urls": opts.urls,
        "grown_from_default_capacity": grown,
        "scrapy_rfp": rfp,
        "memory_ratio_vs_rfp": round(rfp["bytes_per_url"] / ours["bytes_per_url"], 1),
        "ops_ratio_vs_rfp": round(ours["ops_per_s"] / rfp["ops_per_s"], 2),
    })))


if __name__ == "__main__":
    main()
