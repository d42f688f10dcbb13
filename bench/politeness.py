"""Pages/s under politeness: the frontier against Scrapy's default scheduler and scrapy-redis, same run.

Three shapes, each on its own sandbox, each crawled for SECONDS by four runs:
the CPU-bound rate (our crawler with no interval), the frontier, Scrapy's
default scheduler (`DOWNLOAD_DELAY` = interval, `CONCURRENT_REQUESTS_PER_DOMAIN`
1) and scrapy-redis's scheduler against a real redis-server on a free port.
All runs use `CONCURRENT_REQUESTS` 64.

* main (the top-level keys): 500 hosts, one seed per host, interval 5 s.
* `discovery`: the same 500 hosts found from one seed URL through cross-host links.
* `powerlaw`: 100 hosts, interval 1 s, Zipf host sizes (many small hosts run dry).

The bound is min(the CPU-bound rate, what politeness allows): the pages an
ideal polite crawler fetches in SECONDS on the same web from the same seeds
(fetches take no time, concurrency is unlimited, each host visits robots.txt
first and then one page per interval; `SandboxWeb.ideal_polite_fetches`). With
every host seeded that is hosts x (SECONDS / interval - 1) pages (the robots.txt
visit comes first; a fetch at the closing instant cannot complete); from one
seed it counts the time discovery takes. Pages are counted on the server's
record within SECONDS of each crawl's first request. Violations
come from the sandbox's server-side record (finish-to-arrival gaps below the
interval, and hosts with two requests in progress). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.audit import pages_in_window  # noqa: E402
from sandbox.harness import SandboxProcess, run_crawl, with_peak_rss  # noqa: E402
from sandbox.servers import RedisServer  # noqa: E402

STOCK_SCRAPY = {
    "SCHEDULER": "scrapy.core.scheduler.Scheduler",
    "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
    "DOWNLOADER": "scrapy.core.downloader.Downloader",
    "DOWNLOADER_MIDDLEWARES": {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": 100,
        "crawlproj.downloadermiddlewares.robots_txt.RobotsTxtMiddleware": None,
    },
}


def measure(sandbox: SandboxProcess, workdir: Path, seconds: float, interval: float, settings: dict,
            seeds: str | None = None) -> dict:
    sandbox.reset()
    result = run_crawl(
        "web", workdir, args={"seeds": seeds or sandbox.seeds_file},
        settings={"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{workdir}/crawl.db",
                  "CLOSESPIDER_TIMEOUT": seconds, "CONCURRENT_REQUESTS": 64, "LOG_LEVEL": "WARNING", **settings},
        timeout=seconds * 3 + 120,
    )
    if result.returncode != 0:
        raise SystemExit(f"crawl failed: {result.log[-2000:]}")
    records = sandbox.records()
    # The window is SECONDS from the crawl's first request, on the server's clock, for every crawler.
    pages = pages_in_window(records, seconds)
    report = sandbox.report(interval, basis="idle")
    return {"pages": pages, "pages_per_s": round(pages / seconds, 2), "violations": report["violations"],
            "min_gap": report["min_gap"], "max_concurrency": report["max_concurrency"]}


def scrapy_redis_settings(redis_url: str) -> dict:
    return {**STOCK_SCRAPY, "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
            # scrapy-redis needs its own dupefilter under Scrapy 2.19.
            "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
            "REDIS_URL": redis_url, "SCHEDULER_PERSIST": False}


SHAPES = {
    "main": {"hosts": 500, "interval": 5.0, "sandbox": ["--cross-host", "0"], "one_seed": False},
    "discovery": {"hosts": 500, "interval": 5.0, "sandbox": ["--cross-host", "0.3"], "one_seed": True},
    "powerlaw": {"hosts": 100, "interval": 1.0, "sandbox": ["--cross-host", "0", "--power-law", "1.0"],
                 "one_seed": False},
}


def run_shape(name: str, seconds: float, tmp: Path) -> dict:
    shape = SHAPES[name]
    hosts, interval = shape["hosts"], shape["interval"]
    per_host = int(seconds / interval) + 10
    seeds = tmp / f"{name}-seeds.txt"
    with SandboxProcess("--hosts", str(hosts), "--pages", str(per_host), "--no-robots-mix", "--no-japanese",
                        *shape["sandbox"], seeds_file=seeds) as sandbox:
        crawl_seeds = None
        if shape["one_seed"]:
            crawl_seeds = str(tmp / f"{name}-one-seed.txt")
            first = next(line for line in seeds.read_text().splitlines() if line and not line.startswith("#"))
            Path(crawl_seeds).write_text(first + "\n")
        web = sandbox.web
        seed_urls = web.seeds()[:1] if shape["one_seed"] else web.seeds()
        polite = web.ideal_polite_fetches(seed_urls, interval, seconds) / seconds
        cpu = measure(sandbox, tmp / f"{name}-cpu", min(20.0, seconds), 0.0,
                      {"MIN_INTERVAL": 0, "INTERVAL_DURATION_FACTOR": 0})
        ours = measure(sandbox, tmp / f"{name}-frontier", seconds, interval, {"MIN_INTERVAL": interval}, crawl_seeds)
        stock = measure(sandbox, tmp / f"{name}-scrapy", seconds, interval,
                        {**STOCK_SCRAPY, "DOWNLOAD_DELAY": interval, "CONCURRENT_REQUESTS_PER_DOMAIN": 1}, crawl_seeds)
        with RedisServer() as redis:
            peer = measure(sandbox, tmp / f"{name}-redis", seconds, interval,
                           {**scrapy_redis_settings(redis.url), "DOWNLOAD_DELAY": interval,
                            "CONCURRENT_REQUESTS_PER_DOMAIN": 1}, crawl_seeds)
    bound = min(polite, cpu["pages_per_s"])

    def ratio(other: dict) -> float | None:
        return round(ours["pages_per_s"] / other["pages_per_s"], 2) if other["pages_per_s"] else None

    return {
        "hosts": hosts, "interval_s": interval, "seconds": seconds, "concurrent_requests": 64,
        "seeds": 1 if shape["one_seed"] else hosts,
        "pages_per_s": ours["pages_per_s"],
        "bound_pages_per_s": round(bound, 2),
        "ideal_polite_pages_per_s": round(polite, 2),
        "efficiency": round(ours["pages_per_s"] / bound, 3),
        "violations": ours["violations"],
        "min_gap_s": ours["min_gap"],
        "max_concurrency": ours["max_concurrency"],
        "cpu_bound_pages_per_s": cpu["pages_per_s"],
        "scrapy_default_pages_per_s": stock["pages_per_s"],
        "scrapy_default_violations": stock["violations"],
        "ratio_vs_scrapy_default": ratio(stock),
        "scrapy_redis_pages_per_s": peer["pages_per_s"],
        "scrapy_redis_violations": peer["violations"],
        "ratio_vs_scrapy_redis": ratio(peer),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--shapes", default="main,discovery,powerlaw", help="comma-separated: " + ",".join(SHAPES))
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, the same code paths (make test)")
    opts = parser.parse_args()
    if opts.smoke:
        opts.seconds, opts.shapes = 3.0, "main"
        # Scrapy's close waits out every request its download slots hold, a delay each: at 5 s
        # the peers took half a minute each to stop.
        SHAPES["main"] = {**SHAPES["main"], "interval": 1.0}
    tmp = Path(tempfile.mkdtemp(prefix="bench-politeness-"))
    shapes = opts.shapes.split(",")
    results = {name: run_shape(name, opts.seconds, tmp) for name in shapes}
    out: dict = {"bench": "politeness"}
    out.update(results.pop("main", {}))
    out.update(results)
    print(json.dumps(with_peak_rss(out)))


if __name__ == "__main__":
    main()
