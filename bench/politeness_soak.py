"""Politeness soak: 200 hosts, every load-reduction function on, 5 minutes, audited at the server.

The sandbox mixes ordinary hosts with every robots.txt variant, Japanese hosts,
slow hosts (4-16 kB/s lines), erroring hosts (503 with Retry-After, dropped
connections) and trap hosts (infinite calendar, endless paths, session ids).
The crawl runs with the Waseda interval, robots.txt refresh, sitemaps, CGI hop
limit, suspend, per-site cap, retries through the frontier and host parking.

Checked from the server's own record only:
* interval violations: a gap (finish to next arrival, same host) below the
  interval in force that the server can know for itself: MIN_INTERVAL, the
  Crawl-delay it announced, and its Retry-After after a 503;
* concurrency violations: a host with two requests in progress at once.

Prints one JSON line with at least `pages`, `hosts`, `interval_violations`,
`concurrency_violations`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.audit import politeness_report  # noqa: E402
from sandbox.harness import SandboxProcess, run_crawl, with_peak_rss  # noqa: E402

MIN_INTERVAL = 1.0
CRAWL_DELAY = 3.0
RETRY_AFTER = 5


def host_overrides(hosts: int) -> list[str]:
    """Every tenth host is slow, every tenth erroring, three are traps."""
    args = []
    for i in range(hosts):
        if i % 10 == 1:
            args += ["--host", f"{i}:bandwidth={4000 * (1 + i % 4)}"]
        elif i % 10 == 2:
            args += ["--host", f"{i}:error_rate=0.2,retry_after={RETRY_AFTER},drop_rate=0.1"]
    for i, trap in zip((3, 13, 23), ("calendar", "deep", "session")):
        args += ["--host", f"{i}:trap={trap}"]
    return args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, the same code paths (make test)")
    opts = parser.parse_args()
    if opts.smoke:
        opts.hosts, opts.seconds = 30, 10.0
    tmp = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    with SandboxProcess("--hosts", str(opts.hosts), "--pages", "120", "--crawl-delay", str(CRAWL_DELAY),
                        *host_overrides(opts.hosts), seeds_file=tmp / "seeds.txt") as sandbox:
        result = run_crawl("web", tmp, args={"seeds": sandbox.seeds_file}, timeout=opts.seconds * 2 + 300, settings={
            "HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{tmp}/crawl.db",
            "CLOSESPIDER_TIMEOUT": opts.seconds, "LOG_LEVEL": "WARNING",
            "MIN_INTERVAL": MIN_INTERVAL, "ROBOTSTXT_TTL": 60, "ROBOTSTXT_SITEMAPS": True,
            "SUSPEND_AFTER_SECONDS": 60, "SUSPEND_FOR": 10, "MAX_PAGES_PER_HOST": 100, "CGI_HOP_LIMIT": 5,
            "RETRY_TIMES": 3, "RETRY_BACKOFF_BASE": 2, "HOST_PARK_AFTER": 5, "HOST_PARK_FOR": 30,
        })
        if result.returncode != 0:
            raise SystemExit(f"crawl failed: {result.log[-2000:]}")
        records = sandbox.records()
        web = sandbox.web
    floor = {web.host_name(h): CRAWL_DELAY if web.specs[h].robots == "crawl_delay" else MIN_INTERVAL
             for h in web.hosts}
    report = politeness_report(records, floor)
    by_host: dict[str, list] = {}
    for r in records:
        by_host.setdefault(r.host, []).append(r)
    retry_after_violations = 0
    for recs in by_host.values():
        recs.sort(key=lambda r: r.arrival)
        retry_after_violations += sum(1 for a, b in zip(recs, recs[1:])
                                      if a.status == 503 and b.arrival - a.finish < RETRY_AFTER - 0.001)
    stats = result.stats
    print(json.dumps(with_peak_rss({
        "bench": "politeness_soak", "seconds": opts.seconds,
        "pages": sum(1 for r in records if r.status == 200 and r.path != "/robots.txt"),
        "requests": len(records),
        "hosts": report["hosts"],
        "interval_violations": report["interval_violations"] + retry_after_violations,
        "concurrency_violations": report["concurrency_violations"],
        "min_gap_s": report["min_gap"],
        "retry_after_violations": retry_after_violations,
        "dropped_connections": sum(1 for r in records if r.status == -1),
        "answers_503": sum(1 for r in records if r.status == 503),
        "robots_fetches": sum(1 for r in records if r.path == "/robots.txt"),
        "crawler": {k: v for k, v in sorted(stats.items()) if k.startswith((
            "frontier/interval_rule/", "frontier/hosts_by_rule/", "frontier/suspensions", "frontier/hosts_parked",
            "frontier/backoffs", "frontier/retries_deferred", "traps/", "robotstxt/refreshed",
            "robotstxt/sitemaps_seeded", "address_safety/"))},
    })))


if __name__ == "__main__":
    main()
