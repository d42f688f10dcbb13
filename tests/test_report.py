"""``scrapy report`` on a sandbox crawl whose graph and languages are known."""

import csv
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from crawlproj.geo import locate, world_map_svg
from crawlproj.report.analysis import host_pagerank
from sandbox.harness import PROJECT_DIR, crawl_sandbox
from crawlproj.urls import host_of

pytestmark = pytest.mark.slow


def dense_pagerank(edges, damping=0.85):
    """The textbook definition on a dense matrix: the reference for the sparse one."""
    hosts = sorted({h for s, t, _ in edges for h in (s, t)})
    n, index = len(hosts), {h: i for i, h in enumerate(hosts)}
    m = np.zeros((n, n))
    for s, t, w in edges:
        if s != t:
            m[index[t], index[s]] += w
    for j in range(n):
        m[:, j] = m[:, j] / m[:, j].sum() if m[:, j].sum() else 1.0 / n
    google = damping * m + (1 - damping) / n
    rank = np.full(n, 1.0 / n)
    for _ in range(500):
        rank = google @ rank
    return {h: rank[i] for h, i in index.items()}


def test_pagerank_matches_the_definition():
    edges = [("a", "b", 3), ("b", "c", 1), ("c", "a", 2), ("a", "c", 1), ("d", "a", 1), ("a", "a", 5)]
    got, want = host_pagerank(edges), dense_pagerank(edges)
    assert got == pytest.approx(want, abs=1e-8) and sum(got.values()) == pytest.approx(1.0)


def test_the_report_ranks_crawled_hosts_apart_and_counts_every_failed_attempt(tmp_path):
    """Twenty hosts linked to and never crawled ranked ahead of the two crawled; "Errors: None."
    after 1,090 DNS failures of robots.txt (issue 58)."""
    from crawlproj.report.analysis import analyse
    from crawlproj.report.output import write_report
    from crawlproj.store.sqlite import SqliteStore

    path = str(tmp_path / "crawl.db")
    store = SqliteStore(path)
    crawled = ["a.test", "b.test"]
    with store.conn:
        store.conn.executemany("INSERT INTO pages (url, host, status) VALUES (?, ?, 200)",
                               [(f"http://{h}/{i}", h, ) for h in crawled for i in range(3)])
        links = [(f"http://a.test/{i}", f"http://x{j}.test/", "a.test", f"x{j}.test") for i in range(3) for j in range(20)]
        links += [("http://a.test/0", "http://b.test/0", "a.test", "b.test")]
        store.conn.executemany("INSERT INTO links (source, target, source_host, target_host) VALUES (?,?,?,?)", links)
        store.conn.executemany("INSERT INTO host_errors (host, kind, count) VALUES (?, 'dns', ?)",
                               [(f"x{j}.test", 1090 // 20 + (j < 1090 % 20)) for j in range(20)])
    store.conn.close()
    result = analyse(path)
    assert [h for h, _ in result["pagerank_top"]] == ["b.test", "a.test"]  # the crawled ones, and only they
    assert len(result["pagerank_linked_top"]) == 20 and all(h.startswith("x") for h, _ in result["pagerank_linked_top"])
    assert result["failed_attempts_by_kind"] == {"dns": 1090}
    page = (tmp_path / "out" / "report.html") if write_report(result, tmp_path / "out") else None
    text = page.read_text()
    assert "6 pages stored from 2 hosts; 0 of the pages are duplicates of others; 0 pages failed, 1,090 attempts" in text
    assert "Most important hosts crawled" in text and "Most important hosts linked to, not crawled" in text


def test_server_locations_come_from_the_offline_tables():
    assert locate("127.0.0.1").label == "local" and locate("10.1.2.3").label == "local"
    assert locate("fe80::1").label == "local" and locate("::1").label == "local"
    assert locate(None).label == "unknown" and locate("not-an-ip").label == "unknown"
    japan = locate("133.11.0.1")  # the University of Tokyo's network
    assert (japan.label, japan.country) == ("JP", "Japan") and 30 < japan.lat < 46 and 128 < japan.lon < 146
    assert locate("8.8.8.8").label == "US"
    svg = world_map_svg({"JP": 3, "local": 5})
    assert svg.count('class="server"') == 1 and 'data-location="JP"' in svg and "local: 5" in svg
    assert svg.count("<path") > 150  # the countries' outlines


def test_report_on_a_sandbox_crawl(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "10", "--pages", "12", "--content-mix")
    web = sandbox.web
    conn, _ = crawl_sandbox(sandbox, tmp_path, MIN_INTERVAL=0.05, RENDER_MODE="never")
    out = tmp_path / "report"
    run = subprocess.run([sys.executable, "-m", "scrapy", "report", "--store", f"sqlite:///{tmp_path / 'crawl.db'}",
                          "--out", str(out)], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "CRAWLPROJ_PROGRESS": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    # A progress bar with an ETA on stderr, ending at every page; stdout stays one JSON line.
    last = run.stderr.replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("reading pages: 100%") and f"{report['pages']}/{report['pages']}" in last, last
    assert "ETA" in last and json.loads(run.stdout)["pages"] == report["pages"]
    stored = [(u, host_of(u)) for (u,) in conn.execute("SELECT url FROM pages")]
    assert report["pages"] == len(stored) == len(web.expected_pages())
    assert report["by_tld"] == {"test": len(stored)} and report["by_location"] == {"local": len(stored)}
    # Japanese hosts are i % 10 in 7, 8, 9 (UTF-8, Shift_JIS, EUC-JP): their titles must come out "ja"
    japanese = sum(1 for _, h in stored if web.specs[web.host_index(h)].japanese)
    assert japanese > 0 and report["by_language"].get("ja") == japanese
    assert report["by_language"].get("en") == len(stored) - japanese
    dynamic = sum(1 for u, _ in stored if ".cgi" in u)
    assert report["static_dynamic"] == {k: v for k, v in (("static", len(stored) - dynamic), ("dynamic", dynamic)) if v}
    # PageRank over the host graph the sandbox says the stored pages link
    edges = {}
    for source, target in web.expected_links(web.expected_pages()):
        key = (host_of(source), host_of(target))
        edges[key] = edges.get(key, 0) + 1
    want = dense_pagerank([(s, t, n) for (s, t), n in edges.items()])
    with open(out / "pagerank.csv", encoding="utf-8") as fh:
        got = {row["host"]: float(row["pagerank"]) for row in csv.DictReader(fh)}
    assert got == pytest.approx(want, abs=1e-6)
    # External links are the sandbox's own; internal ones add the template hosts' navigation
    # (layout the ground truth does not list), so they are checked against the stored pairs.
    external = sum(n for (s, t), n in edges.items() if s != t)
    assert sum(c.get("external", 0) for c in report["links_per_site"].values()) == external
    internal = sum(1 for s, t in set(conn.execute("SELECT source, target FROM links")) if host_of(s) == host_of(t))
    assert sum(c.get("internal", 0) for c in report["links_per_site"].values()) == internal
    assert report["duplicates"] > 0 and report["mirror_pairs"]  # content-mix: variants and mirrors
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") >= 3 and "http" not in page.split("<body>")[0]  # self-contained
    # Figures numbered in order with plain captions; a chart of one bar is a sentence; empty sections say so.
    numbers = [int(n) for n in re.findall(r"Figure (\d+)\. ", page)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 3
    assert f"All {len(stored):,} pages are under .test." in page and "servers are in one place: local" in page
    assert "<h2>Errors</h2><p>Pages whose fetch failed for good, by kind.</p><p>None.</p>" in page
