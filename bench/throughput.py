"""Pages per core on real pages: crawlproj against a bare Scrapy spider and Scrapy's default scheduler.

Real documentation sites from Debian packages (``--sites``: by default five, sandbox.docsites.SITES, about
6,400 pages from 2 KB to 4 MB) are served by nginx on loopback, each as its own
virtual host. Every figure is read from nginx's own access log, never from a crawler.

* ``cpu``: no politeness interval, ``CONCURRENT_REQUESTS`` 16, each crawler reads the
  five sites to the end (``--seconds-cpu`` caps it). crawlproj with every default on
  (store with links, near-duplicates, WARC, revisit state, render detection) against a
  bare Scrapy spider (bench/bare_spider.py) that follows the same <a href> links and
  stores nothing. Whole crawls, because in a fixed window the two read different pages
  (Scrapy's default order is depth-first, the frontier's breadth-first per host) and
  the pages run from 2 KB to 5.9 MB. Pages/s over the crawl's span on the server's
  clock, and CPU ms per page (user + system of the crawl's process tree, from its first
  request to its exit: start-up is not counted).
* ``workers``: the same CPU-bound crawl with ``-s WORKERS=2`` (two crawl processes over
  a Redis frontier the command starts itself), against one process. Judged on the pages
  fetched in the first WINDOW seconds (``window_speedup``): later, only libstdc++'s 3,900
  pages are left, one host, which politeness lets have one request in flight however
  many processes there are; the whole crawl's rates are printed too (``speedup``), the
  CPUs each kept busy (``one_cores_used``, ``two_cores_used``), how late on average each
  crawl's frontier handed a page out past its host's due time (``one_late_ms_per_page``,
  ``two_late_ms_per_page``, from the crawls' stats) and each worker's share of the pages
  handed out (``two_shares``).
* ``polite``: ``MIN_INTERVAL`` 0.2 s, 16 concurrent, SECONDS_POLITE seconds, against
  Scrapy's default scheduler with ``DOWNLOAD_DELAY`` 0.2 (same spider and pipelines).
  Pages within SECONDS_POLITE of each crawl's first request (each crawl runs 15 s
  longer, so its start-up does not shorten that window); violations are gaps
  below the interval between one response's end and the next request's arrival, and
  hosts with two requests in progress. The bound is what politeness allows: each host
  fetches robots.txt, then one page per interval plus the server's own mean service
  time, up to the pages reachable from its start page. ``share_of_bound_all_fetches``
  counts each host's other fetches too (404s, a render sample's scripts), up to its bound.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox.audit import first_arrival, politeness_report  # noqa: E402
from sandbox.docsites import DOMAIN, HOST_RESOLVE, SITE_SETS, TEST_SITES, ensure_installed  # noqa: E402
from sandbox.harness import crawl_command, with_peak_rss  # noqa: E402
from sandbox.servers import NginxServer  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
WINDOW = 30.0  # seconds from a crawl's first request in which several hosts are still active
WINDOW_MARGIN = 15.0  # a timed crawl runs this much longer than the window its pages are counted in
STOCK_SCHEDULER = {
    "SCHEDULER": "scrapy.core.scheduler.Scheduler",
    "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
    "DOWNLOADER": "scrapy.core.downloader.Downloader",
    "DOWNLOADER_MIDDLEWARES": {"scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": 100,
                               "crawlproj.downloadermiddlewares.robots_txt.RobotsTxtMiddleware": None},
}
NO_INTERVAL = {"MIN_INTERVAL": 0, "INTERVAL_DURATION_FACTOR": 0, "WASEDA_INTERVAL_ENABLED": False,
               "KEEPALIVE_CLOSE_PAUSE": 0}


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and every live descendant, plus what its
    reaped children used."""
    parents: dict[int, int] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
            stats[int(entry)] = fields
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        if p in stats:
            f = stats[p]
            total += sum(int(x) for x in f[11:15]) / TICKS  # utime stime cutime cstime
        todo.extend(c for c, parent in parents.items() if parent == p)
    return total


class Run:
    """One crawl as a child process; CPU counted from the first request nginx logs to the exit."""

    def __init__(self, cmd: list[str], cwd: Path, log: Path, nginx: NginxServer, env: dict | None = None):
        nginx.reset()
        self.nginx = nginx
        self.log = log
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=open(log, "w"),
                                     env={**os.environ, **(env or {})})
        self.cpu_at_first = None
        self.cpu_last = 0.0
        self.watcher = threading.Thread(target=self._watch, daemon=True)
        self.watcher.start()

    def _watch(self) -> None:
        while self.proc.poll() is None:
            cpu = tree_cpu(self.proc.pid)
            if cpu:
                self.cpu_last = cpu
            if self.cpu_at_first is None and self.nginx.access_log.exists() and self.nginx.access_log.stat().st_size:
                self.cpu_at_first = cpu
            time.sleep(0.05)

    def wait(self, timeout: float) -> float:
        """Wait for the crawl; its CPU seconds from the first request on."""
        before = os.times()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise SystemExit(f"crawl did not finish in {timeout:.0f} s; see {self.log}") from None
        self.watcher.join()
        after = os.times()
        if code != 0:
            raise SystemExit(f"crawl failed ({code}): {self.log.read_text()[-3000:]}")
        total = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        return total - (self.cpu_at_first or 0.0)


#: What a render fetches besides its document (an evidence sample's scripts and data): not pages.
SUBRESOURCES = (".js", ".mjs", ".css", ".json", ".map", ".png", ".gif", ".jpg", ".jpeg", ".svg", ".ico", ".woff",
                ".woff2", ".ttf")


def pages_of(records, window: float | None = None) -> list:
    """The pages fetched (in the first ``window`` seconds): each page's first 200 response, so a
    page fetched again (as a render's evidence sample is) counts once; robots.txt and a
    render's sub-resources are left out."""
    start = first_arrival(records)
    seen, pages = set(), []
    for r in sorted(records, key=lambda r: r.arrival):
        if r.path == "/robots.txt" or r.status != 200 or r.path.split("?", 1)[0].endswith(SUBRESOURCES):
            continue
        if (window is None or r.arrival < start + window) and (r.host, r.path) not in seen:
            seen.add((r.host, r.path))
            pages.append(r)
    return pages


def crawlproj_run(nginx: NginxServer, work: Path, seeds: Path, seconds: float, settings: dict,
                  margin: float = WINDOW_MARGIN) -> Run:
    work.mkdir(parents=True, exist_ok=True)
    cmd = crawl_command("web", {"seeds": str(seeds)}, {
        "HOST_RESOLVE": HOST_RESOLVE, "ALLOWED_DOMAINS": DOMAIN, "STORE_URI": f"sqlite:///{work}/crawl.db",
        # Past the counted window: time from the spider's start to its first request must not shorten it.
        "CLOSESPIDER_TIMEOUT": seconds + margin if seconds else 0,
        "CONCURRENT_REQUESTS": 16, "LOG_LEVEL": "WARNING", "DASHBOARD_ENABLED": False, **settings})
    return Run(cmd, ROOT, work / "crawl.log", nginx)


def bare_run(nginx: NginxServer, work: Path, seeds: Path, seconds: float, settings: dict | None = None,
             sites: tuple = SITE_SETS["default"]) -> Run:
    work.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(ROOT / "bench" / "bare_spider.py"),
           "-a", f"seeds={seeds}", "-a", "domains=" + ",".join(s.name for s in sites),
           "-s", "TWISTED_DNS_RESOLVER=crawlproj.resolver.HostResolveResolver", "-s", f"HOST_RESOLVE={HOST_RESOLVE}",
           "-s", f"CLOSESPIDER_TIMEOUT={seconds}", "-s", "CONCURRENT_REQUESTS=16", "-s", "LOG_LEVEL=WARNING",
           "-s", "TELNETCONSOLE_ENABLED=False"]
    for key, value in (settings or {}).items():
        cmd += ["-s", f"{key}={value}"]
    # Outside the project (no scrapy.cfg): Scrapy's defaults, not crawlproj's settings.
    return Run(cmd, work, work / "crawl.log", nginx, env={"PYTHONPATH": str(ROOT)})


def cpu_figures(run: Run, seconds: float) -> dict:
    cpu = run.wait(seconds * 3 + 180 if seconds else 1800)
    pages = pages_of(run.nginx.records())
    span = max(r.finish for r in pages) - min(r.arrival for r in pages) if len(pages) > 1 else 0.0
    return {"pages": len(pages), "pages_per_s": round(len(pages) / span, 2) if span else 0.0,
            "cpu_ms_per_page": round(1000 * cpu / len(pages), 2) if pages else None,
            "pages_first_window": len(pages_of(pages, WINDOW))}


def frontier_lag(work: Path) -> dict:
    """From a crawl's stats files (one a worker): how late its frontier handed a page out past
    its host's due time on average, and each worker's share of the pages handed out."""
    files = sorted(work.glob("crawl.workers/*/crawl.stats.json")) or [work / "crawl.stats.json"]
    stats = [json.loads(f.read_text()) for f in files if f.exists()]
    handed = [s.get("frontier/dequeued", 0) for s in stats]
    late, total = sum(s.get("frontier/dispatched_late_seconds", 0) for s in stats), sum(handed)
    return {"late_ms_per_page": round(1000 * late / total, 1) if total else None,
            "shares": [round(n / total, 3) for n in handed] if total else []}


def cores_used(figures: dict) -> float | None:
    """The CPUs a CPU-bound crawl kept busy, its helper processes and browser included."""
    ms = figures["cpu_ms_per_page"]
    return round(figures["pages_per_s"] * ms / 1000, 2) if ms else None


def polite_figures(run: Run, seconds: float, interval: float) -> dict:
    run.wait(seconds * 3 + 180)
    records = run.nginx.records()
    report = politeness_report(records, interval, basis="idle")
    pages = pages_of(records, seconds)
    start = first_arrival(records)
    counted = {id(r) for r in pages}
    # The host's other fetches in the window (its 404s, a render sample's scripts, a page fetched
    # again): slots politeness spent that the bound, counting pages only, does not.
    others = Counter(r.host.split(".")[0] for r in records
                     if r.path != "/robots.txt" and r.arrival < start + seconds and id(r) not in counted)
    return {"pages": len(pages), "violations": report["violations"],
            "min_gap_s": report["min_gap"], "max_concurrency": report["max_concurrency"],
            "per_host": dict(sorted(Counter(r.host.split(".")[0] for r in pages).items())),
            "other_fetches_per_host": dict(sorted(others.items())), "records": records}


def polite_bound(records, reachable: dict[str, int], interval: float, seconds: float) -> int:
    """Pages an ideal polite crawler fetches in ``seconds``: per host, robots.txt and then one
    page per (interval + the server's mean service time on that host), up to its reachable pages."""
    service: dict[str, list[float]] = defaultdict(list)
    for r in records:
        service[r.host].append(r.finish - r.arrival)
    bound = {}
    for host, count in reachable.items():
        times = service.get(host) or [0.0]
        per_fetch = interval + sum(times) / len(times)
        bound[host.split(".")[0]] = min(count, int(seconds / per_fetch) - 1)
    return dict(sorted(bound.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds-cpu", type=float, default=0.0, help="cap of the CPU-bound crawls (0: to the end)")
    parser.add_argument("--seconds-polite", type=float, default=180.0)
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--only", default="cpu,workers,polite", help="comma-separated parts to run")
    parser.add_argument("--sites", default="default", choices=sorted(SITE_SETS),
                        help="the site mix: default (five sites), long (eight), wide (seven: pages of MB, 9,000 generated), "
                             "other (rustdoc, the Apache manual in 11 languages, LilyPond: 404s, 7 MB pages), "
                             "kernel (two releases of one Sphinx site, 6,800 pages, beside eight small sites in six languages)")
    parser.add_argument("--smoke", action="store_true", help="two small sites, seconds a crawl (make test)")
    opts = parser.parse_args()
    parts = set(opts.only.split(","))
    sites, margin = SITE_SETS[opts.sites], WINDOW_MARGIN
    if opts.smoke:
        # A margin past the window so a loaded machine's slow start still stores pages: bench/memory.py's
        # smoke crawl of 2 s once stored none beside other tests (a crawl that stores none exits 1).
        sites, opts.seconds_cpu, opts.seconds_polite, margin = TEST_SITES, 2.0, 2.0, 4.0
    ensure_installed(sites)
    tmp = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    seeds = tmp / "seeds.txt"
    out: dict = {"bench": "throughput", "site_mix": "smoke" if opts.smoke else opts.sites, "sites": len(sites)}
    with NginxServer({s.name: s.root for s in sites}) as nginx:
        seeds.write_text("".join(f"http://{s.name}:{nginx.port}{s.start}\n" for s in sites))
        # Every crawl reads the sites to the end first: the pages each host has reachable.
        bare = cpu_figures(bare_run(nginx, tmp / "cpu-bare", seeds, opts.seconds_cpu, sites=sites), opts.seconds_cpu)
        reachable = Counter(r.host for r in {(r.host, r.path): r for r in pages_of(nginx.records())}.values())
        out["pages_total"] = sum(reachable.values())
        if parts & {"cpu", "workers"}:
            ours = cpu_figures(crawlproj_run(nginx, tmp / "cpu-ours", seeds, opts.seconds_cpu, NO_INTERVAL, margin),
                               opts.seconds_cpu)
            out["cpu"] = {"crawlproj": ours, "bare_scrapy": bare,
                          "ratio_pages_per_s": round(ours["pages_per_s"] / bare["pages_per_s"], 3)}
        if "workers" in parts:
            two = cpu_figures(crawlproj_run(nginx, tmp / "cpu-workers", seeds, opts.seconds_cpu,
                                            {**NO_INTERVAL, "WORKERS": 2}, margin), opts.seconds_cpu)
            one = out["cpu"]["crawlproj"]
            out["workers"] = {"window_s": WINDOW, "one_window_pages": one["pages_first_window"],
                              "two_window_pages": two["pages_first_window"],
                              "window_speedup": round(two["pages_first_window"] / one["pages_first_window"], 3),
                              "one_pages_per_s": one["pages_per_s"], "two_pages_per_s": two["pages_per_s"],
                              "two_cpu_ms_per_page": two["cpu_ms_per_page"],
                              # Cores each kept busy (pages/s x CPU a page): a worker's helper and
                              # browser use the second core too, which caps what a second worker adds.
                              "one_cores_used": cores_used(one), "two_cores_used": cores_used(two),
                              "speedup": round(two["pages_per_s"] / one["pages_per_s"], 3)}
            # Where the time between a host's fetches went: the frontier's lag past its due times,
            # and how the workers shared the pages (their stats files).
            one_lag, two_lag = frontier_lag(tmp / "cpu-ours"), frontier_lag(tmp / "cpu-workers")
            out["workers"].update({"one_late_ms_per_page": one_lag["late_ms_per_page"],
                                   "two_late_ms_per_page": two_lag["late_ms_per_page"],
                                   "two_shares": two_lag["shares"]})
        if "polite" in parts:
            polite = {"MIN_INTERVAL": opts.interval}
            ours = polite_figures(crawlproj_run(nginx, tmp / "polite-ours", seeds, opts.seconds_polite, polite, margin),
                                  opts.seconds_polite, opts.interval)
            stock = polite_figures(
                crawlproj_run(nginx, tmp / "polite-scrapy", seeds, opts.seconds_polite,
                              {**STOCK_SCHEDULER, "DOWNLOAD_DELAY": opts.interval, "CONCURRENT_REQUESTS_PER_DOMAIN": 1},
                              margin),
                opts.seconds_polite, opts.interval)
            per_host_bound = polite_bound(ours.pop("records"), dict(reachable), opts.interval, opts.seconds_polite)
            bound = sum(per_host_bound.values())
            stock.pop("records")
            out["polite"] = {"interval_s": opts.interval, "seconds": opts.seconds_polite, "bound": bound,
                             "bound_per_host": per_host_bound,
                             "crawlproj": ours, "scrapy_default": stock,
                             "share_of_bound": round(ours["pages"] / bound, 3) if bound else None,
                             # Each host's fetches of any kind, up to its bound: what the crawler's
                             # own lag lost, apart from the slots its 404s and samples took.
                             "share_of_bound_all_fetches": round(sum(
                                 min(b, ours["per_host"].get(h, 0) + ours["other_fetches_per_host"].get(h, 0))
                                 for h, b in per_host_bound.items()) / bound, 3) if bound else None,
                             "ratio_vs_scrapy_default": round(ours["pages"] / stock["pages"], 3) if stock["pages"] else None}
    print(json.dumps(with_peak_rss(out)))


if __name__ == "__main__":
    main()
