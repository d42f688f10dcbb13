"""Rendering: rendered pages/s against static fetches of the same pages, and the browser's memory.

1. **Speed.** One sandbox web (static pages, no cross-host links needed) is
   crawled three times by real ``scrapy crawl`` processes: ``RENDER_MODE=never``
   (every page a static fetch) and ``RENDER_MODE=always`` (every page rendered in
   Chromium: navigation, DOM read, page closed), the same pages and bytes. Politeness
   stays on but short (``MIN_INTERVAL`` 0.05 s over 40 hosts: a bound of 800
   pages/s), so both are limited by the crawler, not by the politeness rules.
   ``rendered_pages_per_s`` and ``static_pages_per_s`` are pages over the crawl's
   wall time (start-up included: the browser's launch is part of the cost);
   ``slowdown`` is their ratio. The CPU per page of the crawl process tree
   (crawler, Playwright driver and browser) is printed too.
2. **Memory.** The rendered crawl of the ``--pages-total`` pages (300 by default)
   is sampled every 0.25 s: the proportional set size of every Chromium process under
   the crawler. ``browser_rss_growth_bytes`` is the last tenth's median minus the
   median of the tenth after warm-up (the second tenth), with a fresh browser context
   every ``RENDER_CONTEXT_MAX_PAGES`` (100) pages; ``no_rotation`` is the same crawl
   with one context throughout.
3. **Auto mode** on the sandbox's JavaScript mix (``--js-mix``): how many pages
   were rendered, and that no static page was.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawlproj.rendering.browser import browser_rss, descendants  # noqa: E402
from crawlproj.sandbox.harness import PROJECT_DIR, SandboxProcess, crawl_command  # noqa: E402

INTERVAL = 0.05


def _tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its live descendants (children reaped count through cutime)."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    for p in [pid, *descendants(pid)]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
    return total


def crawl(sandbox: SandboxProcess, workdir: Path, **settings: object) -> dict:
    """One crawl in a subprocess, its browser memory and CPU sampled from outside."""
    workdir.mkdir(parents=True, exist_ok=True)
    stats_file = workdir / "stats.json"
    cmd = crawl_command("web", {"seeds": sandbox.seeds_file}, {
        "HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{workdir}/crawl.db",
        "STATS_FILE": str(stats_file), "MIN_INTERVAL": INTERVAL, "INTERVAL_DURATION_FACTOR": 0,
        "WASEDA_INTERVAL_ENABLED": False, "LOG_LEVEL": "WARNING", **settings})
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    samples: list[tuple[float, int]] = []
    cpu = [0.0]

    def sample() -> None:
        while proc.poll() is None:
            samples.append((time.monotonic() - started, browser_rss(proc.pid)))
            cpu[0] = max(cpu[0], _tree_cpu(proc.pid))
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate(timeout=1800)
    sampler.join()
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"crawl failed ({proc.returncode}): {err[-2000:]}")
    stats = json.loads(stats_file.read_text())
    pages = stats.get("item_scraped_count", 0)
    rss = [r for _, r in samples if r > 0]  # the browser starts with the first render
    tenth = max(1, len(rss) // 10)
    return {
        "pages": pages, "elapsed_s": round(elapsed, 2), "pages_per_s": round(pages / elapsed, 2),
        "cpu_ms_per_page": round(1000 * max(cpu[0], stats.get("process/cpu_seconds", 0)) / max(1, pages), 1),
        "rendered": stats.get("render/rendered", 0), "static_pages": stats.get("render/static_pages", 0),
        "browser_rss_start_bytes": int(statistics.median(rss[tenth:2 * tenth])) if len(rss) >= 20 else None,
        "browser_rss_end_bytes": int(statistics.median(rss[-tenth:])) if len(rss) >= 20 else None,
        "browser_rss_max_bytes": max(rss) if rss else 0,
        "contexts_closed": stats.get("render/contexts_closed", 0),
        "pages_closed": stats.get("playwright/page_count/closed", 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--pages-total", type=int, default=320)
    args = parser.parse_args()
    per_host = max(1, args.pages_total // args.hosts)
    web_args = ["--hosts", str(args.hosts), "--pages", str(per_host), "--no-robots-mix", "--cross-host", "0.05",
                "--out-links", "4"]
    out: dict = {"bench": "render", "hosts": args.hosts, "interval_s": INTERVAL}
    with tempfile.TemporaryDirectory(prefix="bench-render-") as tmp:
        work = Path(tmp)
        with SandboxProcess(*web_args, seeds_file=work / "seeds.txt") as sandbox:
            static = crawl(sandbox, work / "static", RENDER_MODE="never")
            rendered = crawl(sandbox, work / "rendered", RENDER_MODE="always")
            sandbox.reset()
            no_rotation = crawl(sandbox, work / "no_rotation", RENDER_MODE="always", RENDER_CONTEXT_MAX_PAGES=0)
        with SandboxProcess(*web_args, "--js-mix", seeds_file=work / "seeds-js.txt") as sandbox:
            auto = crawl(sandbox, work / "auto", RENDER_MODE="auto")
    growth = lambda r: (r["browser_rss_end_bytes"] - r["browser_rss_start_bytes"]  # noqa: E731
                        if r["browser_rss_start_bytes"] is not None else None)
    out.update(
        pages=rendered["pages"],
        rendered_pages_per_s=rendered["pages_per_s"],
        static_pages_per_s=static["pages_per_s"],
        slowdown=round(static["pages_per_s"] / rendered["pages_per_s"], 1),
        cpu_slowdown=round(rendered["cpu_ms_per_page"] / static["cpu_ms_per_page"], 1),
        browser_rss_growth_bytes=growth(rendered),
        browser_rss_growth_bytes_no_rotation=growth(no_rotation),
        static=static, rendered=rendered, no_rotation=no_rotation,
        auto_js_mix={k: auto[k] for k in ("pages", "rendered", "static_pages", "pages_per_s")},
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
