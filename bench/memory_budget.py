"""The memory budget: bytes per URL, page or host of every structure that grows with a crawl.

Each structure is built through its own API with realistic entries (URLs of 60-80
characters, real robots.txt rules, a request as the frontier queues it), and measured
with tracemalloc (Python's allocations; a structure's C memory is measured as its
bytes, e.g. the Bloom filter's bit array) or as its file's bytes on disk. Prints one
JSON line: per structure, where it lives, bytes per unit, the unit, and the setting
that bounds it; docs/operations.md's memory budget table is built from it, and plans
a crawl of 100 million URLs over a million hosts. ``--smoke``: smaller counts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox.harness import with_peak_rss  # noqa: E402

from scrapy import Request  # noqa: E402

from crawlproj import defaults  # noqa: E402
from crawlproj.frontier.entry import request_entry  # noqa: E402

ROBOTS = b"""User-agent: *
Disallow: /cgi-bin/
Disallow: /search
Disallow: /tmp/
Allow: /search/about
Crawl-delay: 2
Sitemap: https://www.example.org/sitemap.xml

User-agent: Googlebot
Disallow: /private/
"""


def url(i: int, host: int | None = None) -> str:
    h = i % 50_000 if host is None else host
    return f"https://www{h}.example-site-{h}.org/section/{i % 97}/article-{i}/index.html"


def traced(build: Callable[[int], object], n: int) -> float:
    """Bytes per unit that ``build(n)`` keeps allocated (what it returns stays alive)."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = build(n)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return (after - before) / n


def frontier_entry(n: int) -> list:
    return [request_entry(Request(url(i), meta={"depth": 3}), None) for i in range(n)]


def frontier_disk(n: int) -> float:
    from crawlproj.frontier.spill import SegmentStore, SpillQueue

    with tempfile.TemporaryDirectory() as tmp:
        store = SegmentStore(tmp)
        queue = SpillQueue(store, buffer=8)
        for i in range(n):
            queue.append(request_entry(Request(url(i), meta={"depth": 3}), None))
        on_disk = sum(f.stat().st_size for f in Path(tmp).iterdir())
    return on_disk / n


def bloom(n: int) -> float:
    from crawlproj.frontier.urlseen import GrowingBloom

    b = GrowingBloom(n, defaults.URLSEEN_ERROR_RATE)
    return b.bytes / n


def near_duplicates_disk(n: int) -> tuple[float, float]:
    from crawlproj.content.sqlite_near_duplicates import SqliteNearDuplicateIndex

    rng = random.Random(1)
    words = [f"w{i}" for i in range(5000)]
    with tempfile.TemporaryDirectory() as tmp:
        index = SqliteNearDuplicateIndex(os.path.join(tmp, "nd.db"))
        prints = [index.fingerprint(" ".join(rng.choice(words) for _ in range(120))) for _ in range(n)]

        def fill(count: int) -> SqliteNearDuplicateIndex:
            for i in range(count):
                index.add(url(i), prints[i])
                if i % 500 == 0:
                    index.commit()
            index.commit()
            return index

        in_memory = traced(fill, n)
        index.close()
        size = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp))
    return in_memory, size / n


def ordering(name: str, n: int) -> float:
    from crawlproj.ordering.importance import Backlinks, Opic

    def build(count: int) -> object:
        component = Opic() if name == "opic" else Backlinks()
        for i in range(count):
            component.admit(hash(url(i)), "h", {"opic_share": 0.1}, True)
        return component

    return traced(build, n)


def frontier_keys(n: int) -> float:
    """Per politeness key the frontier keeps once a key's queue ran dry (next-allowed time)."""
    from crawlproj.frontier.tiers import TwoTierFrontier

    def build(count: int) -> TwoTierFrontier:
        f = TwoTierFrontier(max_active=count + 10)
        for i in range(count):
            f.push(f"www{i}.example-site-{i}.org", i)
        now = 0.0
        while (got := f.pop(now)) is not None:
            f.release(got[0], now + 1.0)
        return f

    return traced(build, n)


def host_politeness(n: int) -> float:
    from scrapy.settings import Settings

    from crawlproj.politeness.hosts import HostPoliteness

    class Answer:  # what the Waseda window reads of a response
        status, body, headers, flags = 200, b"x" * 20_000, {}, []

    hosts = HostPoliteness.from_settings(Settings({k: getattr(defaults, k) for k in dir(defaults) if k.isupper()}))

    def build(count: int) -> HostPoliteness:
        for i in range(count):
            for _ in range(3):
                hosts.fetched(f"www{i}.example-site-{i}.org", Answer(), 0.05, 1.0, 1.0, 1e9)
        return hosts

    return traced(build, n)


def robots(n: int) -> float:
    from crawlproj.politeness.robots import Rfc9309RobotParser

    def build(count: int) -> dict:
        parsers = {}
        for i in range(count):
            parser = Rfc9309RobotParser(ROBOTS)
            parser.allowed(f"https://h{i}.org/section/{i}", "crawlproj")  # rules compiled on first use
            parsers[f"h{i}.example-site-{i}.org"] = parser
        return parsers

    return traced(build, n)


def dashboard_hosts(n: int) -> float:
    from crawlproj.dashboard.board import HostBoard

    def build(count: int) -> HostBoard:
        board = HostBoard()
        for i in range(count):
            board.response(f"www{i}.example-site-{i}.org", 200, "192.0.2.1", 1.0)
        return board

    return traced(build, n)


def render_evidence(n: int) -> float:
    from crawlproj.rendering.hosts import HostRenderEvidence

    def build(count: int) -> HostRenderEvidence:
        evidence = HostRenderEvidence(2, 2, 50, 4)
        for i in range(count):
            evidence.judged(f"www{i}.example-site-{i}.org", False)
            evidence.sample(f"www{i}.example-site-{i}.org", False)
        return evidence

    return traced(build, n)


def site_cap(n: int) -> float:
    from crawlproj.traps import SiteCap

    def build(count: int) -> SiteCap:
        cap = SiteCap(50_000)
        for i in range(count):
            cap.admit(f"www{i}.example-site-{i}.org")
        return cap

    return traced(build, n)


def seen_texts(n: int) -> float:
    import hashlib

    from crawlproj.traps import SeenTexts

    def build(count: int) -> SeenTexts:
        seen = SeenTexts(count + 1)
        for i in range(count):
            seen.copy(f"www{i % 1000}.example-site-{i % 1000}.org", hashlib.blake2b(url(i).encode(), digest_size=16).digest())
        return seen

    return traced(build, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true")
    opts = parser.parse_args()
    n = 2_000 if opts.smoke else 20_000
    entry = traced(frontier_entry, n)
    front = defaults.FRONTIER_LEVELS * 2 * defaults.FRONTIER_FRONT_BUFFER
    back = defaults.FRONTIER_MAX_ACTIVE_KEYS * 2 * defaults.FRONTIER_BACK_BUFFER
    nd_memory, nd_disk = near_duplicates_disk(n // 4)
    rows = {
        "frontier_queued_in_memory": {"where": "memory", "bytes": round(entry), "per": "queued URL in a buffer",
                                      "bound_mb": round(entry * (front + back) / 2**20),
                                      "bound": "FRONTIER_LEVELS x 2 x FRONTIER_FRONT_BUFFER + "
                                               "FRONTIER_MAX_ACTIVE_KEYS x 2 x FRONTIER_BACK_BUFFER entries"},
        "frontier_queued_on_disk": {"where": "disk", "bytes": round(frontier_disk(n)), "per": "queued URL",
                                    "bound": "FRONTIER_SPILL_DIR (JOBDIR)"},
        "frontier_key_state": {"where": "memory", "bytes": round(frontier_keys(n)), "per": "host seen",
                               "bound": "hosts"},
        "url_seen_bloom": {"where": "memory", "bytes": round(bloom(10**6), 2), "per": "URL seen",
                           "bound": "URLSEEN_CAPACITY (sized up front; grows in doubling steps past it)"},
        "near_duplicate_index": {"where": "disk", "bytes": round(nd_disk), "per": "canonical page",
                                 "memory_bytes": round(nd_memory, 1), "bound": "disk (SQLite page cache: 2 MB)"},
        "ordering_opic": {"where": "memory", "bytes": round(ordering("opic", n)), "per": "queued URL",
                          "bound": "queued URLs (PRIORITIZER opic only)"},
        "ordering_backlinks": {"where": "memory", "bytes": round(ordering("backlinks", n)), "per": "queued URL",
                               "bound": "queued URLs (PRIORITIZER backlinks only)"},
        "host_politeness": {"where": "memory", "bytes": round(host_politeness(n)), "per": "host fetched",
                            "bound": "hosts"},
        "robots_txt_cache": {"where": "memory", "bytes": round(robots(n // 10)), "per": "host",
                             "bound": "ROBOTSTXT_CACHE_HOSTS"},
        "dashboard_hosts": {"where": "memory", "bytes": round(dashboard_hosts(n)), "per": "host",
                            "bound": "DASHBOARD_HOSTS_KEPT"},
        "render_evidence": {"where": "memory", "bytes": round(render_evidence(n)), "per": "host",
                            "bound": "hosts (RENDER_MODE auto)"},
        "site_cap_counts": {"where": "memory", "bytes": round(site_cap(n)), "per": "host",
                            "bound": "hosts (MAX_PAGES_PER_HOST)"},
        "duplicate_page_texts": {"where": "memory", "bytes": round(seen_texts(n)), "per": "page",
                                 "bound": "DUPLICATE_TEXTS_KEPT"},
    }
    per_host = sum(r["bytes"] for r in rows.values() if r["bound"].startswith("hosts") or r["per"] == "host fetched")
    plan = {"hosts": 10**6, "urls": 10**8, "per_host_state_mb": round(per_host * 10**6 / 2**20),
            "bloom_mb": round(rows["url_seen_bloom"]["bytes"] * 10**8 / 2**20),
            "frontier_buffers_mb": rows["frontier_queued_in_memory"]["bound_mb"],
            "frontier_disk_gb": round(rows["frontier_queued_on_disk"]["bytes"] * 10**8 / 2**30, 1),
            "near_duplicates_disk_gb": round(rows["near_duplicate_index"]["bytes"] * 10**8 / 2**30, 1)}
    print(json.dumps(with_peak_rss({"bench": "memory_budget", "units": n, "structures": rows, "per_host_bytes": per_host,
                      "plan_100m_urls_1m_hosts": plan})))


if __name__ == "__main__":
    main()
