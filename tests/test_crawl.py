"""End-to-end crawls of the sandbox web by real `scrapy crawl` processes."""

import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter

import pytest

from sandbox import harness
from sandbox.harness import PROJECT_DIR, run_crawl

pytestmark = pytest.mark.slow

INTERVAL = 0.05


def crawl_sandbox(sandbox, tmp_path, spider="web", args=None, **settings):
    return harness.crawl_sandbox(sandbox, tmp_path, spider, args, **{"MIN_INTERVAL": INTERVAL, **settings})


@pytest.mark.edit_loop  # the web spider over the sandbox, end to end: make test-fast keeps it
def test_web_crawl_stores_every_reachable_page_once_and_the_exact_link_graph(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "50", "--pages", "20")
    conn, result = crawl_sandbox(sandbox, tmp_path, LOG_LEVEL="DEBUG")  # the enabled extensions are said at DEBUG
    web = sandbox.web
    stored = {url for (url,) in conn.execute("SELECT url FROM pages")}
    expected = web.expected_pages()
    assert len(expected) > 600
    assert stored == expected
    links = set(conn.execute("SELECT source, target FROM links"))
    assert links == web.expected_links(stored)
    # The server saw each page exactly once, and never two requests at once on one host.
    fetched = Counter((r.host, r.path) for r in sandbox.records() if r.path != "/robots.txt")
    assert max(fetched.values()) == 1
    assert sum(fetched.values()) == len(web.expected_crawl())  # noindex pages are fetched, not stored
    report = sandbox.report(INTERVAL)
    assert report["max_concurrency"] == 1 and report["violations"] == 0, report
    # Crawl-delay hosts rest their own, longer interval.
    delayed = [web.host_name(h) for h in web.hosts if web.specs[h].robots == "crawl_delay"]
    assert sandbox.report()["per_host"][delayed[0]]["min_gap"] >= 0.1
    # robots.txt: 5xx hosts are untouched, 4xx hosts are crawled in full, the product token group applies.
    hosts_with_pages = {h for (h,) in conn.execute("SELECT DISTINCT host FROM pages")}
    for h in web.hosts:
        name, kind = web.host_name(h), web.specs[h].robots
        assert (name in hosts_with_pages) == (kind != "error"), (name, kind)
    private = {h for (h,) in conn.execute("SELECT DISTINCT host FROM pages WHERE url LIKE '%/private/%'")}
    assert private and all(web.specs[web.host_index(h)].robots not in ("private", "error") for h in private)
    assert any(web.specs[web.host_index(h)].robots == "missing" for h in private)
    statuses = dict(conn.execute("SELECT name, robots_status FROM hosts"))
    assert statuses["h4.sandbox.test"] == 404 and statuses["h5.sandbox.test"] == 503
    assert result.stats["crawlproj/robots_forbidden"] > 0
    # Scrapy's remote-control server (arbitrary Python for a token holder) is never opened.
    enabled = result.log.split("Enabled extensions:", 1)[1].split("]", 1)[0]
    assert "CoreStats" in enabled and "RemoteControl" not in enabled


def test_japanese_pages_are_stored_as_correct_text(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "20", "--pages", "6")
    conn, _ = crawl_sandbox(sandbox, tmp_path)
    web = sandbox.web
    checked = 0
    for h in (7, 8, 9, 17, 18, 19):  # utf-8, shift_jis, euc-jp; header then <meta> declared
        for k in range(web.size(h)):
            row = conn.execute("SELECT title, charset FROM pages WHERE url = ?", (web.url(h, k),)).fetchone()
            if row is None:
                continue
            assert row[0] == web.page(h, k).title
            assert row[1].replace("_", "-") in {"utf-8": {"utf-8"}, "shift_jis": {"cp932", "shift-jis"},
                                                "euc-jp": {"euc-jp"}}[web.specs[h].charset]
            checked += 1
    assert checked >= 20


def test_hop_limit_and_scope_settings(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "10", "--pages", "30")
    conn, _ = crawl_sandbox(sandbox, tmp_path, DEPTH_LIMIT=1, ALLOWED_DOMAINS="h1.sandbox.test,h2.sandbox.test")
    stored = {url for (url,) in conn.execute("SELECT url FROM pages")}
    depths = {d for (d,) in conn.execute("SELECT DISTINCT depth FROM pages")}
    assert depths <= {0, 1}
    # Seeds of every host are fetched; links are only followed into h1 and h2.
    beyond_seeds = {u for u in stored if not u.endswith(".sandbox.test:%d/" % sandbox.port)}
    assert beyond_seeds and all("//h1." in u or "//h2." in u for u in beyond_seeds)


@pytest.mark.parametrize("robots_in", ["meta", "header"])
def test_site_spider_stays_under_its_prefix_and_obeys_robots_directives(sandbox_factory, tmp_path, robots_in):
    # header: the host sends its noindex and nofollow as X-Robots-Tag (generic, and named for
    # crawlproj), beside one for another crawler on every page, which must change nothing.
    header = ["--host", "0:robots_header=true"] if robots_in == "header" else []
    sandbox = sandbox_factory("--hosts", "4", "--pages", "40", "--no-robots-mix", *header)
    start = sandbox.web.origin(0) + "/p/1.html"
    conn, _ = crawl_sandbox(sandbox, tmp_path, spider="site", args={"url": start, "deny": r"\.cgi$"})
    stored = {url for (url,) in conn.execute("SELECT url FROM pages")}
    prefix = sandbox.web.origin(0) + "/p/"
    assert stored and all(u.startswith(prefix) and not u.endswith(".cgi") for u in stored)
    # Ground truth: the pages reachable from the start through links that stay in scope.
    web, frontier, seen = sandbox.web, [start], set()
    while frontier:
        url = frontier.pop()
        if url in seen:
            continue
        seen.add(url)
        page = web.page(0, web.page_index(0, url[len(web.origin(0)):]))
        if not page.meta_nofollow:
            frontier += [l.target for l in page.links if not l.nofollow and l.target.startswith(prefix)
                         and not l.target.endswith(".cgi")]
    noindex = {u for u in seen if web.page(0, web.page_index(0, u[len(web.origin(0)):])).meta_noindex}
    assert noindex and stored == seen - noindex
    # The server's record: every page reached was fetched once, and nothing beyond them.
    fetched = [r.path for r in sandbox.records() if r.path != "/robots.txt"]
    assert sorted(fetched) == sorted(u[len(web.origin(0)):] for u in seen)
    assert {r.host for r in sandbox.records()} == {"h0.sandbox.test"}


def test_site_spider_max_pages(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "2", "--pages", "50", "--no-robots-mix")
    conn, result = crawl_sandbox(sandbox, tmp_path, spider="site",
                                 args={"url": sandbox.web.origin(1) + "/", "max_pages": "7"})
    assert conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0] == 7
    assert result.stats["finish_reason"] == "max_pages"


def test_bad_seed_lines_are_reported_not_fatal(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "2", "--pages", "3", "--no-robots-mix")
    seeds = tmp_path / "mixed.txt"
    # A line in Shift_JIS (not UTF-8) is skipped and counted, not the whole list refused.
    seeds.write_bytes(b"\xef\xbb\xbf# comment\n\njavascript:alert(1)\nhttp://bad..host/\n"
                      + "http://\u65e5\u672c.test/\n".encode("shift_jis") + sandbox.web.seeds()[0].encode() + b"  # root\n")
    conn, result = crawl_sandbox(sandbox, tmp_path, args={"seeds": str(seeds)})
    assert result.stats["crawlproj/seeds"] == 1
    assert result.stats["crawlproj/url_rejected/scheme"] == 1 and result.stats["crawlproj/url_rejected/bad_host"] == 1
    assert result.stats["crawlproj/seeds_not_utf8"] == 1 and "mixed.txt:5: not UTF-8, skipped" in result.log
    assert "mixed.txt:3: not a crawlable URL" in result.log
    assert conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0] >= 1


def test_unreachable_hosts_become_fetch_errors(tmp_path):
    seeds = tmp_path / "seeds.txt"
    # Pinned to a loopback port nothing listens on: connection refused, fast, no traffic leaves the machine.
    seeds.write_text("http://nowhere.sandbox.test:9/\n")
    result = run_crawl("web", tmp_path, args={"seeds": str(seeds)},
                       settings={"HOST_RESOLVE": "*.sandbox.test=127.0.0.1", "STORE_URI": f"sqlite:///{tmp_path}/c.db",
                                 "RETRY_TIMES": 0})
    # A crawl that stores nothing says why in one line, and exits 1.
    assert result.returncode == 1, result.log[-2000:]
    # ... its real cause: robots.txt could not be fetched, the connection refused (not "disallowed").
    assert "crawlproj: no page was stored" in result.log and "connection_refused" in result.log
    assert "robots.txt disallowed" not in result.log
    conn = sqlite3.connect(tmp_path / "c.db")
    # robots.txt is unreachable, so the host is disallowed and nothing is fetched (RFC 9309).
    assert conn.execute("SELECT robots_status FROM hosts").fetchall() == [(None,)]
    assert conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0] == 0


def test_demo_prints_a_summary_whose_last_line_is_json(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "scrapy", "demo", "--interval", "0.05", "--out", str(out)],
                          cwd=PROJECT_DIR, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"pages", "hosts", "errors", "pages_per_s", "violations"} <= summary.keys()
    from sandbox.graph import SandboxConfig, SandboxWeb

    assert summary["pages"] == len(SandboxWeb(SandboxConfig(hosts=50, pages=20, content_mix=True)).expected_pages())
    assert summary["errors"] == 0 and summary["max_concurrency"] == 1
    # "errors 0" no longer hides what was not crawled (issue 41, item 6): the sandbox's robots.txt
    # variants refuse some URLs, and some hosts answer robots.txt with a 503.
    said = next(line for line in proc.stdout.splitlines() if line.startswith("not crawled"))
    assert summary["robots_forbidden"] > 0 and f"{summary['robots_forbidden']} refused by robots.txt" in said, said
    assert "answered robots.txt with a 5xx" in said, said
    assert summary["exact_duplicates"] > 0 and summary["near_duplicates"] > 0 and summary["warc_files"] == 1
    assert (out / "crawl.db").exists() and list((out / "warc").glob("crawlproj-*.warc.gz"))
    # The demo leaves its crawl packaged for replay, and says how to report it.
    assert summary["wacz"] == str(out / "crawl.wacz")
    wacz = os.path.join(os.path.dirname(sys.executable), "wacz")
    check = subprocess.run([wacz, "validate", "-f", summary["wacz"]], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"scrapy report --store sqlite:///{out / 'crawl.db'}" in proc.stdout


def test_a_start_url_that_is_not_http_is_refused_with_its_reason(tmp_path):
    result = run_crawl("site", tmp_path, args={"url": "ftp://example.org/pub/"},
                       settings={"STORE_URI": f"sqlite:///{tmp_path}/c.db", "DASHBOARD_ENABLED": False}, timeout=120)
    assert result.returncode == 2
    assert "crawlproj: -a url='ftp://example.org/pub/' is not a crawlable http(s) URL (scheme)" in result.log
    assert "Traceback" not in result.log and "Crawler.stats is not set" not in result.log
