"""Replay against the live page: do crawlproj's archives show documentation pages as they looked?

Real documentation sites of different generators (Debian's packages, served by nginx on
loopback: Node.js's hand-made template, Python's Sphinx, PostgreSQL's DocBook, the Apache
manual's XSLT) are crawled with page requisites on (``REQUISITES_ENABLED``) and packaged as a
WACZ at close. pywb then replays it, and every sampled page is loaded live and from the
archive in Chromium at one viewport (1280x900), each in a fresh browser context
(:mod:`sandbox.replay_check`):

* ``resources_present``: of the requests the live pages made that succeeded, the share replay
  answered (``missing``: a few of the others);
* ``similarity_median`` and ``similarity_p10``: SSIM of the two viewport screenshots;
* ``text_match_mean`` and ``text_match_min``: the visible text, words in common;
* ``extra_requests_per_page``: the crawl's requests for requisites over its requests for pages
  (robots.txt left out), from nginx's log, shared assets fetched once (the URL-seen filter);
* ``politeness_violations``: gaps under ``MIN_INTERVAL`` and overlapping requests per host in
  nginx's log of the crawl (requisites included).

``--shots DIR`` writes a side-by-side PNG (live | replay) of each site's first sampled page.
Prints one JSON line, with ``targets`` (each target of issue 56: met or not).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawlproj.rendering.browser import find_chromium  # noqa: E402
from sandbox import docsites  # noqa: E402
from sandbox.audit import politeness_report  # noqa: E402
from sandbox.harness import run_crawl, with_peak_rss  # noqa: E402
from sandbox.replay_check import HOST_RULES, VIEWPORT, compare, load, side_by_side  # noqa: E402
from sandbox.servers import NginxServer, PywbServer  # noqa: E402

SITES = {
    "nodejs": docsites.SITES[4],  # hand-made template: dark sidebar, highlight.js, icons
    "python": docsites.SITES[2],  # Sphinx (pydoctheme): stylesheets, scripts, images
    "postgresql": docsites.SITES[0],  # DocBook XSL: one stylesheet
    "apache": docsites.DocSite("apache.docs.test", "apache2-doc", "/usr/share/doc/apache2-doc/manual",
                               "/en/index.html"),  # XSLT: stylesheets, images, prettify.js
}
#: Issue 56's targets.
TARGETS = {"resources_present": 0.99, "similarity_median": 0.97, "similarity_p10": 0.90, "text_match_mean": 0.99,
           "extra_requests_per_page": 0.15, "politeness_violations": 0}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def sample(db: Path, host: str, n: int) -> list[tuple[str, str]]:
    """``n`` stored HTML pages of ``host`` answered 200, spread evenly over its URLs: (URL, capture
    timestamp, 14 digits)."""
    rows = [(url, time.strftime("%Y%m%d%H%M%S", time.gmtime(at))) for url, at in sqlite3.connect(db).execute(
        "SELECT final_url, fetched_at FROM pages WHERE host = ? AND status = 200 AND content_type LIKE 'text/html%' "
        "AND warc_file IS NOT NULL ORDER BY url", (host,))]
    step = max(1, len(rows) / n)
    return [rows[int(i * step)] for i in range(min(n, len(rows)))]


def request_counts(db: Path, records: list) -> tuple[int, int]:
    """(page requests, requisite requests) in nginx's log of the crawl: a request is a page's
    when its URL is a stored page or a fetch error, robots.txt is neither, the rest requisites."""
    conn = sqlite3.connect(db)
    pages = {url.split("/", 3)[-1] for (url,) in conn.execute("SELECT url FROM pages UNION SELECT final_url FROM pages "
                                                               "UNION SELECT url FROM fetch_errors")}
    fetched = [r for r in records if r.path != "/robots.txt"]
    page_requests = sum(1 for r in fetched if r.path.lstrip("/") in pages)
    return page_requests, len(fetched) - page_requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sites", default="nodejs,python,postgresql,apache", help="of: " + ", ".join(SITES))
    parser.add_argument("--pages", type=int, default=8, help="pages compared per site")
    parser.add_argument("--max-pages", type=int, default=400, help="pages crawled per site at most")
    parser.add_argument("--interval", type=float, default=0.05, help="MIN_INTERVAL of the crawl")
    parser.add_argument("--shots", default="", help="directory for side-by-side screenshots (one per site)")
    parser.add_argument("--smoke", action="store_true", help="two sites, two pages each (make test)")
    args = parser.parse_args()
    if args.smoke:
        args.sites, args.pages, args.max_pages = "nodejs,postgresql", 2, 12
    names = [s.strip() for s in args.sites.split(",") if s.strip()]
    unknown = [n for n in names if n not in SITES]
    if unknown:
        sys.exit(f"bench/replay.py: unknown site {unknown[0]!r}; choose from {', '.join(SITES)}")
    sites = [SITES[n] for n in names]
    docsites.ensure_installed(tuple(sites))
    chromium = find_chromium()
    if not chromium:
        sys.exit("bench/replay.py: chromium is missing: apt-get install -y --no-install-recommends chromium")
    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="crawlproj-replay-") as tmp, \
            NginxServer({s.name: s.root for s in sites}) as nginx:
        tmp = Path(tmp)
        (tmp / "seeds.txt").write_text("".join(f"http://{s.name}:{nginx.port}{s.start}\n" for s in sites))
        result = run_crawl("web", tmp / "run", args={"seeds": str(tmp / "seeds.txt")}, timeout=3600, settings={
            "HOST_RESOLVE": docsites.HOST_RESOLVE, "ALLOWED_DOMAINS": docsites.DOMAIN, "MIN_INTERVAL": args.interval,
            "RENDER_MODE": "never", "MAX_PAGES_PER_HOST": args.max_pages, "STORE_URI": f"sqlite:///{tmp}/crawl.db",
            "REQUISITES_ENABLED": True, "WACZ_ON_CLOSE": True, "WACZ_FILE": str(tmp / "crawl.wacz")})
        if result.returncode != 0:
            sys.exit(f"bench/replay.py: the crawl failed (exit {result.returncode}): {result.log[-1500:]}")
        crawl_seconds = result.elapsed
        records = nginx.records()  # the crawl's requests only: the live loads come after
        report = politeness_report(records, args.interval)
        page_requests, requisite_requests = request_counts(tmp / "crawl.db", records)
        comparisons, shots = [], []
        with PywbServer([str(tmp / "crawl.wacz")]) as pywb, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True,
                                        args=[f"--host-resolver-rules={HOST_RULES}"])
            for site in sites:
                for number, (url, timestamp) in enumerate(sample(tmp / "crawl.db", site.name, args.pages)):
                    loads = []
                    for replay in (False, True):
                        context = browser.new_context(viewport=VIEWPORT)
                        loads.append(load(context, f"{pywb.url}{timestamp}/{url}" if replay else url, replay))
                        context.close()
                    comparisons.append(compare(*loads, url))
                    if args.shots and number == 0:
                        Path(args.shots).mkdir(parents=True, exist_ok=True)
                        shot = os.path.join(args.shots, f"replay-{site.name.split('.')[0]}.png")
                        side_by_side(loads[0].png, loads[1].png, shot)
                        shots.append(shot)
            browser.close()
    resources = sum(c.resources for c in comparisons)
    missing = [u for c in comparisons for u in c.missing]
    similarity = [c.similarity for c in comparisons]
    text = [c.text for c in comparisons]
    out = {
        "bench": "replay", "sites": names, "pages_crawled": result.stats.get("store/pages", 0),
        "pages_compared": len(comparisons),
        "resources_live": resources, "resources_present": round(1 - len(missing) / resources, 4) if resources else None,
        "missing": sorted(set(missing))[:8],
        "similarity_median": round(statistics.median(similarity), 4) if similarity else None,
        "similarity_p10": round(percentile(similarity, 0.1), 4) if similarity else None,
        "similarity_min": round(min(similarity), 4) if similarity else None,
        "worst_page": min(comparisons, key=lambda c: c.similarity).url if comparisons else None,
        "text_match_mean": round(statistics.mean(text), 4) if text else None,
        "text_match_min": round(min(text), 4) if text else None,
        "page_requests": page_requests, "requisite_requests": requisite_requests,
        "extra_requests_per_page": round(requisite_requests / page_requests, 4) if page_requests else None,
        "requisite_revisits": result.stats.get("warc/requisite_revisits", 0),
        "politeness_violations": report["violations"], "crawl_seconds": round(crawl_seconds, 1),
        "seconds": round(time.monotonic() - started, 1), "screenshots": shots,
    }
    out["targets"] = {name: (out[name] is not None and (out[name] <= goal if name in ("extra_requests_per_page",
                                                                                     "politeness_violations")
                                                        else out[name] >= goal))
                      for name, goal in TARGETS.items()}
    print(json.dumps(with_peak_rss(out)))


if __name__ == "__main__":
    main()
