"""Pages/s under politeness: the frontier against Scrapy's default scheduler, same run.

Shape 1 (the default): sandbox with 500 hosts, one seed per host, interval 5 s,
CONCURRENT_REQUESTS 64, SECONDS of crawling. The bound is min(hosts/interval,
the CPU-bound rate measured in the same run with no interval). Violations come
from the sandbox's server-side record (finish-to-arrival gaps below the
interval, and hosts with two requests in progress). Prints one JSON line.

Not yet here: the scrapy-redis peer and the `discovery` and `powerlaw` shapes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawlproj.sandbox.harness import SandboxProcess, run_crawl  # noqa: E402

STOCK_SCRAPY = {
    "SCHEDULER": "scrapy.core.scheduler.Scheduler",
    "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
    "DOWNLOADER": "scrapy.core.downloader.Downloader",
    "DOWNLOADER_MIDDLEWARES": {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": 100,
        "crawlproj.politeness.robots.RobotsTxtMiddleware": None,
    },
}


def measure(sandbox: SandboxProcess, workdir: Path, seconds: float, interval: float, settings: dict) -> dict:
    sandbox.reset()
    result = run_crawl(
        "web", workdir, args={"seeds": sandbox.seeds_file},
        settings={"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{workdir}/crawl.db",
                  "CLOSESPIDER_TIMEOUT": seconds, "CONCURRENT_REQUESTS": 64, "LOG_LEVEL": "WARNING", **settings},
        timeout=seconds * 3 + 120,
    )
    if result.returncode != 0:
        raise SystemExit(f"crawl failed: {result.log[-2000:]}")
    pages = sum(1 for r in sandbox.records() if r.path != "/robots.txt" and r.status == 200)
    report = sandbox.report(interval, basis="idle")
    return {"pages": pages, "pages_per_s": round(pages / seconds, 2), "violations": report["violations"],
            "min_gap": report["min_gap"], "max_concurrency": report["max_concurrency"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    opts = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-politeness-"))
    seeds = tmp / "seeds.txt"
    pages_per_host = int(opts.seconds / opts.interval) + 10
    with SandboxProcess("--hosts", str(opts.hosts), "--pages", str(pages_per_host), "--no-robots-mix",
                        "--no-japanese", "--cross-host", "0", seeds_file=seeds) as sandbox:
        cpu = measure(sandbox, tmp / "cpu", min(20.0, opts.seconds), 0.0,
                      {"MIN_INTERVAL": 0, "INTERVAL_DURATION_FACTOR": 0})
        ours = measure(sandbox, tmp / "frontier", opts.seconds, opts.interval, {"MIN_INTERVAL": opts.interval})
        stock = measure(sandbox, tmp / "scrapy", opts.seconds, opts.interval,
                        {**STOCK_SCRAPY, "DOWNLOAD_DELAY": opts.interval, "CONCURRENT_REQUESTS_PER_DOMAIN": 1})
    bound = min(opts.hosts / opts.interval, cpu["pages_per_s"])
    print(json.dumps({
        "bench": "politeness",
        "hosts": opts.hosts, "interval_s": opts.interval, "seconds": opts.seconds, "concurrent_requests": 64,
        "pages_per_s": ours["pages_per_s"],
        "bound_pages_per_s": round(bound, 2),
        "efficiency": round(ours["pages_per_s"] / bound, 3),
        "violations": ours["violations"],
        "min_gap_s": ours["min_gap"],
        "cpu_bound_pages_per_s": cpu["pages_per_s"],
        "scrapy_default_pages_per_s": stock["pages_per_s"],
        "scrapy_default_violations": stock["violations"],
        "ratio_vs_scrapy_default": round(ours["pages_per_s"] / stock["pages_per_s"], 2) if stock["pages_per_s"] else None,
        "scrapy_redis_pages_per_s": None,
    }))


if __name__ == "__main__":
    main()
