"""Memory over long crawls of real pages: resident set against pages, for every process of the crawl.

Real documentation sites from Debian packages (``--sites``: sandbox.docsites.LONG_SITES by default, the
throughput bench's five plus the OpenJDK API reference, Boost and Erlang/OTP, about 21,000
HTML pages) are served by nginx on loopback, each as its own virtual host. Every
``--every`` seconds the bench reads, from /proc, the resident set of the crawl process,
of each worker (``WORKERS``), of the page helper process and of Chromium's process tree,
beside the pages nginx has served by then (its own access log: 200 responses to pages,
robots.txt and a render's sub-resources left out).

Runs (``--only``):

* ``cpu``: no politeness interval, ``CONCURRENT_REQUESTS`` 16, every default on, to the end.
* ``workers``: the same with ``-s WORKERS=2``; figures per worker.
* ``polite``: ``MIN_INTERVAL`` 0.2 s for ``--seconds-polite``.
* ``incremental``: the ``incremental`` profile for ``--seconds-incremental`` (20 minutes by
  default) at ``REVISIT_TIME_SCALE`` 3600 (a real second is a crawl hour), so revisits of
  the pages found first fall due within minutes and keep it going (answered 304 by nginx).
* ``bare``: the peer, a bare Scrapy spider (bench/bare_spider.py) following the same links.

Per run: pages, the crawl process's resident MB at 1,000 / 5,000 / 10,000 / 20,000 pages, its
peak, the slope in MB per 1,000 pages after the first 2,000 (least squares), the helper's
and Chromium's peaks (proportional set size, summed over the tree: shared pages counted once); incremental mode adds the slope in MB per hour over its second half.
Targets (issue 38): slope at most 5, peak at most 600 MB at 20,000 pages, per worker too,
Chromium bounded, incremental flat. Prints one JSON line and draws RSS against pages (PNG,
``--png``; the samples beside it as ``.samples.json``). ``--smoke`` runs the same code on two small sites for a few seconds.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crawlproj.extensions.memory import pss_bytes, rss_bytes, slope  # noqa: E402
from crawlproj.rendering.browser import browser_rss, descendants  # noqa: E402
from sandbox.docsites import DOMAIN, HOST_RESOLVE, SITE_SETS, TEST_SITES, ensure_installed  # noqa: E402
from sandbox.harness import crawl_command, error_lines, with_peak_rss  # noqa: E402
from sandbox.servers import NginxServer  # noqa: E402

MB = 2**20
NO_INTERVAL = {"MIN_INTERVAL": 0, "INTERVAL_DURATION_FACTOR": 0, "WASEDA_INTERVAL_ENABLED": False,
               "KEEPALIVE_CLOSE_PAUSE": 0}
SUBRESOURCES = (".js", ".mjs", ".css", ".json", ".map", ".png", ".gif", ".jpg", ".jpeg", ".svg", ".ico", ".woff",
                ".woff2", ".ttf")
MILESTONES = (1000, 5000, 10_000, 20_000)
WARMUP_PAGES = 2000


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class PageCounter:
    """Distinct pages nginx has served so far (200s), read from its access log as it grows."""

    def __init__(self, log: Path) -> None:
        self.log, self.offset, self.requests = log, 0, 0
        self.seen: set[tuple[str, str]] = set()

    @property
    def pages(self) -> int:
        return len(self.seen)

    def read(self) -> int:
        if not self.log.exists():
            return self.pages
        with open(self.log, "rb") as fh:
            fh.seek(self.offset)
            chunk = fh.read()
        end = chunk.rfind(b"\n") + 1
        self.offset += end
        for line in chunk[:end].decode(errors="replace").splitlines():  # NGINX_LOG_FORMAT
            self.requests += 1
            host, _, _, status, _, _, uri = line.split("\t", 6)
            path = uri.split("?", 1)[0]
            if status == "200" and path != "/robots.txt" and not path.endswith(SUBRESOURCES):
                self.seen.add((host, path))
        return self.pages


class Sampler:
    """Every ``every`` seconds: pages served, and the resident set of each process of the crawl."""

    def __init__(self, proc: subprocess.Popen, pages: PageCounter, every: float) -> None:
        self.proc, self.pages, self.every = proc, pages, every
        self.started = time.monotonic()
        self.samples: list[dict] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while self.proc.poll() is None:
            self.sample()
            time.sleep(self.every)

    def sample(self) -> None:
        root = self.proc.pid
        under = descendants(root)
        # The crawl processes: the command itself, or its workers (WORKERS: python children running scrapy).
        workers = [p for p in under if "scrapy" in _cmdline(p) and "crawl" in _cmdline(p)] or [root]
        helpers = [p for p in under if "multiprocessing" in _cmdline(p)]
        self.samples.append({
            "t": round(time.monotonic() - self.started, 1), "pages": self.pages.read(),
            "crawl": [rss_bytes(p) for p in workers], "helper": sum(pss_bytes(p) for p in helpers),
            "chromium": browser_rss(root)})


def figures(samples: list[dict], warmup: int = WARMUP_PAGES) -> dict:
    """One run's figures from its samples (per worker when there are several)."""
    live = [s for s in samples if any(s["crawl"])]
    workers = max((len(s["crawl"]) for s in live), default=1)
    per_worker = []
    for w in range(workers):
        series = [(s["pages"], s["crawl"][w] / MB) for s in live if len(s["crawl"]) > w and s["crawl"][w]]
        at = {}
        for m in MILESTONES:
            after = [r for p, r in series if p >= m]
            if after:
                at[str(m)] = round(after[0])
        grown = slope([(p / 1000, r) for p, r in series if p >= warmup])
        per_worker.append({"peak_mb": round(max((r for _, r in series), default=0)), "rss_mb_at_pages": at,
                           "slope_mb_per_1000_pages": None if grown is None else round(grown, 2)})
    out = {"pages": max((s["pages"] for s in samples), default=0), "seconds": samples[-1]["t"] if samples else 0,
           **per_worker[0], "helper_peak_mb": round(max((s["helper"] for s in samples), default=0) / MB),
           "chromium_peak_mb": round(max((s["chromium"] for s in samples), default=0) / MB)}
    if workers > 1:
        out["workers"] = per_worker
    return out


def run(nginx: NginxServer, cmd: list[str], cwd: Path, log: Path, every: float, timeout: float,
        env: dict | None = None) -> tuple[list[dict], str]:
    nginx.reset()
    counter = PageCounter(nginx.access_log)
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, **(env or {})})
        sampler = Sampler(proc, counter, every)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise SystemExit(f"crawl did not finish in {timeout:.0f} s; see {log}") from None
    sampler.thread.join()
    sampler.samples.append({**sampler.samples[-1], "pages": counter.read()} if sampler.samples else
                           {"t": 0, "pages": counter.read(), "crawl": [0], "helper": 0, "chromium": 0})
    text = log.read_text(errors="replace")
    if code != 0:
        raise SystemExit(f"crawl failed ({code}): {text[-3000:]}")
    return sampler.samples, text


def crawlproj_cmd(work: Path, seeds: Path, settings: dict) -> list[str]:
    work.mkdir(parents=True, exist_ok=True)
    return crawl_command("web", {"seeds": str(seeds)}, {
        "HOST_RESOLVE": HOST_RESOLVE, "ALLOWED_DOMAINS": DOMAIN, "STORE_URI": f"sqlite:///{work}/crawl.db",
        "CONCURRENT_REQUESTS": 16, "LOG_LEVEL": "INFO", "DASHBOARD_ENABLED": False,
        "STATS_FILE": str(work / "stats.json"), **settings})


def bare_cmd(seeds: Path, sites, seconds: float, items: int) -> list[str]:  # noqa: ANN001
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(ROOT / "bench" / "bare_spider.py"),
           "-a", f"seeds={seeds}", "-a", "domains=" + ",".join(s.name for s in sites),
           "-s", "TWISTED_DNS_RESOLVER=crawlproj.resolver.HostResolveResolver", "-s", f"HOST_RESOLVE={HOST_RESOLVE}",
           "-s", "CONCURRENT_REQUESTS=16", "-s", "LOG_LEVEL=WARNING", "-s", "TELNETCONSOLE_ENABLED=False",
           "-s", f"CLOSESPIDER_TIMEOUT={seconds}"]
    return cmd + (["-s", f"CLOSESPIDER_PAGECOUNT={items}"] if items else [])


def draw(runs: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_pages, by_time) = plt.subplots(1, 2, figsize=(13, 5.4))
    colours = plt.get_cmap("tab10").colors
    for index, (name, samples) in enumerate(runs.items()):
        colour = colours[index % len(colours)]
        live = [s for s in samples if any(s["crawl"])]
        for w in range(max((len(s["crawl"]) for s in live), default=1)):
            label = name if w == 0 else f"{name}, worker {w + 1}"
            points = [(s["pages"], s["crawl"][w] / MB, s["t"] / 60) for s in live if len(s["crawl"]) > w]
            style = "-" if w == 0 else "--"
            by_pages.plot([p for p, _, _ in points], [r for _, r, _ in points], style, color=colour, label=label)
            by_time.plot([t for _, _, t in points], [r for _, r, _ in points], style, color=colour)
        chromium = [(s["pages"], s["chromium"] / MB, s["t"] / 60) for s in samples if s["chromium"]]
        if chromium:
            by_pages.plot([p for p, _, _ in chromium], [r for _, r, _ in chromium], ":", color=colour,
                          label=f"{name}: Chromium")
            by_time.plot([t for _, _, t in chromium], [r for _, r, _ in chromium], ":", color=colour)
    by_pages.set(xlabel="pages served (nginx's log)", ylabel="resident memory (MB)",
                 title="Memory against pages (solid: crawl process; dotted: Chromium, PSS)")
    by_time.set(xlabel="minutes since the crawl started", ylabel="resident memory (MB)",
                title="... and against time (incremental: 20 minutes)")
    for axes in (by_pages, by_time):
        axes.axhline(600, color="grey", linestyle="--", linewidth=0.8)
        axes.text(axes.get_xlim()[1], 605, "600 MB target ", ha="right", va="bottom", fontsize=8, color="grey")
        axes.grid(alpha=0.3)
        axes.set_ylim(bottom=0)
    fig.legend(*by_pages.get_legend_handles_labels(), loc="lower center", ncol=5, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="bare,cpu,workers,polite,incremental", help="comma-separated runs")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between readings")
    parser.add_argument("--items", type=int, default=0, help="stop each crawl at this many items (0: to the end)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for crawlproj's runs (repeatable), as -s would give it")
    parser.add_argument("--seconds-polite", type=float, default=600.0)
    parser.add_argument("--seconds-incremental", type=float, default=1200.0)
    parser.add_argument("--png", default=str(ROOT / "docs" / "memory.png"))
    parser.add_argument("--sites", default="long", choices=sorted(SITE_SETS),
                        help="the site mix: long (eight sites, about 21,000 pages), wide (pages of MB, 9,000 generated), "
                             "other (rustdoc, the Apache manual in 11 languages, LilyPond: 404s, 7 MB pages), "
                             "kernel (two releases of one Sphinx site, 6,800 pages, beside eight small sites in six languages)")
    parser.add_argument("--smoke", action="store_true", help="two small sites, a few seconds a run")
    opts = parser.parse_args()
    runs = opts.only.split(",")
    sites, items, every, cap = SITE_SETS[opts.sites], opts.items, opts.every, 3600.0
    seconds_polite, seconds_incremental = opts.seconds_polite, opts.seconds_incremental
    if opts.smoke:
        sites, items, every, cap, seconds_polite, seconds_incremental = TEST_SITES, 40, 0.5, 60.0, 60.0, 60.0
    ensure_installed(sites)
    tmp = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    seeds = tmp / "seeds.txt"
    limit = {"CLOSESPIDER_ITEMCOUNT": items} if items else {}
    # The smoke's timed runs end at a few pages, their seconds a cap: 2 s beside other tests once
    # stored no page (the crawl then exits 1, and the smoke failed).
    timed = {"CLOSESPIDER_ITEMCOUNT": 10} if opts.smoke else {}
    limit.update(dict(pair.split("=", 1) for pair in opts.set))
    out: dict = {"bench": "memory", "site_mix": "smoke" if opts.smoke else opts.sites, "sites": len(sites),
                 "every_s": every}
    series: dict[str, list[dict]] = {}
    errors: dict[str, int] = {}
    with NginxServer({s.name: s.root for s in sites}) as nginx:
        seeds.write_text("".join(f"http://{s.name}:{nginx.port}{s.start}\n" for s in sites))
        plans = {
            "bare": (bare_cmd(seeds, sites, cap, items), tmp, {"PYTHONPATH": str(ROOT)}),
            "cpu": (crawlproj_cmd(tmp / "cpu", seeds, {**NO_INTERVAL, **limit}), ROOT, None),
            "workers": (crawlproj_cmd(tmp / "workers", seeds, {**NO_INTERVAL, **limit, "WORKERS": 2}), ROOT, None),
            "polite": (crawlproj_cmd(tmp / "polite", seeds, {"MIN_INTERVAL": 0.2, "CLOSESPIDER_TIMEOUT": seconds_polite,
                                                             **timed}),
                       ROOT, None),
            "incremental": (crawlproj_cmd(tmp / "incremental", seeds, {
                # The incremental profile over the sandbox's two exceptions for loopback hosts.
                **NO_INTERVAL, "PROFILE": "incremental", "ADDRESS_ALLOWLIST": "127.0.0.0/8", "PER_IP_CONCURRENCY": 0, "PER_IP_RATE": 0, "DOMAIN_CONCURRENCY": 0,
                "USER_AGENT": "crawlproj/0.1 (+http://docs.test/bench)", "REVISIT_TIME_SCALE": 3600,
                "JOBDIR": str(tmp / "incremental" / "job"), "CLOSESPIDER_TIMEOUT": seconds_incremental, **timed}),
                ROOT, None),
        }
        for name in runs:
            cmd, cwd, env = plans[name]
            samples, log = run(nginx, cmd, cwd, tmp / f"{name}.log", every, cap * 3 + 600, env)
            series[name] = samples
            out[name] = figures(samples, 0 if opts.smoke else WARMUP_PAGES)
            if name != "bare":
                errors[name] = len(error_lines(log))
            if name == "incremental":
                half = [s for s in samples if s["t"] >= samples[-1]["t"] / 2 and s["crawl"][0]]
                per_hour = slope([(s["t"] / 3600, s["crawl"][0] / MB) for s in half])
                stats = json.loads((tmp / "incremental" / "stats.json").read_text())
                out[name].update({"slope_mb_per_hour_second_half": None if per_hour is None else round(per_hour, 1),
                                  "revisits": stats.get("revisit/requests", 0),
                                  "not_modified": stats.get("revisit/not_modified", 0)})
    out["error_lines"] = errors
    if "bare" in out and "cpu" in out and out["bare"]["peak_mb"]:
        out["peak_ratio_cpu_vs_bare"] = round(out["cpu"]["peak_mb"] / out["bare"]["peak_mb"], 2)
    png = Path(opts.png) if not opts.smoke else tmp / "memory.png"
    draw(series, png)
    png.with_suffix(".samples.json").write_text(json.dumps(series))  # to draw again, or read otherwise
    out["png"] = str(png)
    print(json.dumps(with_peak_rss(out)))


if __name__ == "__main__":
    main()
