"""Sitemaps with lastmod and AI-use signals, end to end: real crawls of the sandbox, judged by
the server's own record and by what the store, the revisit queue and the WARC files hold."""

from __future__ import annotations

import sqlite3
from collections import Counter

import pytest

from sandbox.harness import run_crawl

pytestmark = pytest.mark.slow


def _requests(sandbox, host: str) -> list[str]:
    return [r.path for r in sandbox.records() if r.host == host]


def test_sitemap_index_with_gzip_and_lastmod_seeds_the_crawl_and_the_revisit_state(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "2", "--pages", "14", "--no-robots-mix", "--out-links", "0",
                              "--cross-host", "0", "--host", "0:sitemap=index")
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "MIN_INTERVAL": 0.02, "DEPTH_LIMIT": 1,
                "STORE_URI": f"sqlite:///{tmp_path}/crawl.db", "ROBOTSTXT_SITEMAPS": True}
    result = run_crawl("web", tmp_path / "run", args={"seeds": sandbox.seeds_file}, settings=settings)
    assert result.returncode == 0, result.log[-3000:]
    web = sandbox.web
    h0 = web.host_name(0)
    asked = _requests(sandbox, h0)
    # The server saw the index, then both sitemaps it lists (one of them gzip), once each.
    for path in ("/sitemap-index.xml", "/sitemaps/pages-1.xml.gz", "/sitemaps/pages-2.xml"):
        assert asked.count(path) == 1, (path, asked)
    assert asked.index("/robots.txt") < asked.index("/sitemap-index.xml") < asked.index("/sitemaps/pages-2.xml")
    # Depth limit 1 reaches only the root's children; the sitemaps bring every page of h0.
    assert {web.url(0, k) for k in range(14)} <= {f"http://{h0}:{sandbox.port}{p}" for p in asked}
    conn = sqlite3.connect(tmp_path / "crawl.db")
    rows = {url: (lastmod, changefreq, priority) for url, lastmod, changefreq, priority in conn.execute(
        "SELECT url, lastmod, changefreq, priority FROM sitemap_urls WHERE host = ?", (h0,))}
    expected = web.sitemap_lastmods(0)
    assert set(rows) == set(expected)
    assert all(rows[u][0] == expected[u] for u in expected)  # +09:00 in the file, UTC seconds here
    assert rows[web.url(0, 0)][1:] == ("daily", 1.0) and rows[web.url(0, 1)][1:] == ("weekly", 0.5)
    # The revisit state of every page visited holds the sitemap's lastmod as change evidence.
    revisit = sqlite3.connect(tmp_path / "crawl.revisit.db")
    states = dict(revisit.execute("SELECT url, sitemap_lastmod FROM revisit WHERE host = ?", (h0,)))
    stored = {u for (u,) in conn.execute("SELECT url FROM pages WHERE host = ?", (h0,))}
    assert stored and all(states[u] == expected[u] for u in stored)
    assert result.stats["robotstxt/sitemaps_seeded"] == 2
    assert sandbox.report(0.02)["violations"] == 0
    from crawlproj.report.analysis import analyse

    assert {"host": h0, "listed": 14, "with_lastmod": 14, "stored": len(stored)} in analyse(
        str(tmp_path / "crawl.db"))["sitemap_hosts"]


def test_site_spider_reads_a_sitemap_named_on_the_command_line(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "1", "--pages", "12", "--no-robots-mix", "--out-links", "0",
                              "--host", "0:sitemap=index")
    web = sandbox.web
    index = f"{web.origin(0)}/sitemap-index.xml"
    result = run_crawl("site", tmp_path / "run", args={"sitemap": index, "max_pages": "100"},
                       settings={"HOST_RESOLVE": sandbox.host_resolve, "MIN_INTERVAL": 0.02, "DEPTH_LIMIT": 0,
                                 "STORE_URI": f"sqlite:///{tmp_path}/crawl.db"})
    assert result.returncode == 0, result.log[-3000:]
    conn = sqlite3.connect(tmp_path / "crawl.db")
    assert conn.execute("SELECT COUNT(*) FROM sitemap_urls").fetchone()[0] == 12
    asked = _requests(sandbox, web.host_name(0))
    assert asked.count("/sitemap-index.xml") == 1 and asked.count("/sitemaps/pages-1.xml.gz") == 1


def test_a_bad_sitemap_argument_is_one_line_and_a_non_zero_exit(tmp_path):
    result = run_crawl("web", tmp_path / "run", args={"sitemap": "ftp://example.test/sitemap.xml"},
                       settings={"STORE_URI": f"sqlite:///{tmp_path}/crawl.db"})
    assert result.returncode != 0
    assert "-a sitemap='ftp://example.test/sitemap.xml' is not a crawlable" in result.log


@pytest.mark.parametrize("skip", [None, "tdm", "ai-train"])
def test_ai_use_signals_are_recorded_and_reserved_pages_skipped(sandbox_factory, tmp_path, skip):
    from warcio.archiveiterator import ArchiveIterator

    sandbox = sandbox_factory("--hosts", "2", "--pages", "16", "--no-robots-mix", "--cross-host", "0",
                              "--host", "0:ai_signals=true")
    web = sandbox.web
    h0, h1 = web.host_name(0), web.host_name(1)
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "MIN_INTERVAL": 0.02,
                "STORE_URI": f"sqlite:///{tmp_path}/crawl.db", "AI_USE_TDMREP": True}
    if skip:
        settings["AI_USE_SKIP"] = skip
    result = run_crawl("web", tmp_path / "run", args={"seeds": sandbox.seeds_file}, settings=settings)
    assert result.returncode == 0, result.log[-3000:]
    conn = sqlite3.connect(tmp_path / "crawl.db")
    host_rows = {(s, n): v for s, n, v in conn.execute(
        "SELECT source, name, value FROM ai_signals WHERE subject = ?", (h0,))}
    # Recorded per host, whatever is skipped: robots.txt's Content-Signal and tdmrep.json.
    assert host_rows[("robots.txt", "ai-train")] == "no" and host_rows[("robots.txt", "search")] == "yes"
    assert host_rows[("tdmrep.json", "any-reservation")] == "1"
    assert not conn.execute("SELECT COUNT(*) FROM ai_signals WHERE subject = ?", (h1,)).fetchone()[0]
    reachable = {k for k in range(16) if web.url(0, k) in web.expected_pages()}
    asked = _requests(sandbox, h0)
    for host in (h0, h1):  # once per host, reserving or not
        assert _requests(sandbox, host).count("/.well-known/tdmrep.json") == 1
    fetched = {k for k in range(16) if web.path(k) in asked}
    stored = {u for (u,) in conn.execute("SELECT url FROM pages WHERE host = ?", (h0,))}
    page_rows = dict(((u, n), v) for u, n, v in conn.execute(
        "SELECT subject, name, value FROM ai_signals WHERE subject LIKE 'http%' AND source = 'header'"))
    if skip is None:  # everything fetched and stored, each page with its own signals
        assert fetched >= reachable
        header_reserved = {web.url(0, k) for k in reachable if web.tdm_header_reserved(0, k)}
        assert header_reserved and {u for (u, n) in page_rows if n == "tdm-reservation"} == header_reserved
        cgi = next(web.url(0, k) for k in reachable if web.tdm_reserved(0, k))
        assert conn.execute("SELECT value FROM ai_signals WHERE subject = ? AND source = 'tdmrep.json' "
                            "AND name = 'tdm-reservation'", (cgi,)).fetchone() == ("1",)
        # The WARC files say it too: a metadata record beside each response of h0.
        metadata = {}
        for path in (tmp_path / "warc").glob("*.warc.gz"):
            with open(path, "rb") as fh:
                for record in ArchiveIterator(fh):
                    if record.rec_type == "metadata":
                        metadata[record.rec_headers.get_header("WARC-Target-URI")] = record.content_stream().read()
        assert b"ai-use: robots.txt ai-train=no" in metadata[web.url(0, 0)]
        assert b"ai-use: tdmrep.json tdm-reservation=1" in metadata[cgi]
        assert not [u for u in metadata if h1 in u]
        # And the report's AI-use table.
        from crawlproj.report.analysis import analyse

        row = next(r for r in analyse(str(tmp_path / "crawl.db"))["ai_use"] if r["host"] == h0)
        assert row == {"host": h0, "content_signal": "ai-input=yes ai-train=no search=yes",
                       "tdmrep_json": "reserves some", "header_reserved": len(header_reserved),
                       "tdmrep_reserved": len({k for k in reachable if web.tdm_reserved(0, k)})}
    elif skip == "tdm":  # tdmrep.json's /p/*.cgi never asked for; header-reserved pages fetched, not stored
        tdm = {k for k in reachable if web.tdm_reserved(0, k)}
        header = {k for k in reachable if web.tdm_header_reserved(0, k)}
        assert tdm and header and not fetched & tdm
        assert header <= fetched and not {web.url(0, k) for k in header} & stored
        assert {web.url(0, k) for k in reachable - tdm - header} <= stored
        assert result.stats["ai_use/skipped/before_fetch"] >= len(tdm)
    else:  # Content-Signal ai-train=no: no page of h0 fetched at all; h1 untouched
        assert set(asked) <= {"/robots.txt", "/.well-known/tdmrep.json"}
        assert not stored
        assert {u for (u,) in conn.execute("SELECT url FROM pages WHERE host = ?", (h1,))} == {
            u for u in web.expected_pages() if f"//{h1}" in u}
    assert sandbox.report(0.02)["violations"] == 0  # tdmrep.json took a visit of its own


def test_an_incremental_crawl_revisits_what_the_sitemap_says_changed(sandbox_factory, tmp_path):
    """Pages change every day or two of a clock running 14,400x real time; their first revisit is
    30 days out, so in 14 s (56 h) only the sitemaps' lastmod, read again with robots.txt every
    2 s, can bring a page back: each revisit here is the site's word acted on."""
    from sandbox.harness import crawl_sandbox

    scale = 14400.0
    sandbox = sandbox_factory("--hosts", "1", "--pages", "10", "--no-robots-mix", "--out-links", "0",
                              "--host", "0:sitemap=index", "--change-min", "86400", "--change-max", "172800",
                              "--time-scale", str(scale))
    month = 30 * 86400
    conn, result = crawl_sandbox(
        sandbox, tmp_path, HOST_RESOLVE=sandbox.host_resolve, STORE_URI=f"sqlite:///{tmp_path / 'crawl.db'}",
        REVISIT_MODE="incremental", REVISIT_TIME_SCALE=scale, REVISIT_MIN_INTERVAL=3600,
        REVISIT_MAX_INTERVAL=2 * month, REVISIT_FIRST_INTERVAL=[month, month], REVISIT_REFRESH_SECONDS=0.1,
        REVISIT_SCHEDULE="estimate", MIN_INTERVAL=0.05, STORE_FLUSH_INTERVAL=0.1, RENDER_MODE="never",
        ROBOTSTXT_SITEMAPS=True, ROBOTSTXT_TTL=2, CLOSESPIDER_TIMEOUT=14)
    web = sandbox.web
    paths = [r.path for r in sandbox.records() if r.status == 200]
    assert paths.count("/sitemaps/pages-2.xml") >= 3  # read again every ROBOTSTXT_TTL
    pages = Counter(p for p in paths if web.page_index(0, p) is not None)
    refetched = [p for p, n in pages.items() if n >= 2]
    assert refetched, pages
    revisit = sqlite3.connect(tmp_path / "crawl.revisit.db")
    assert result.stats["revisit/due_by_lastmod"] >= sum(pages[p] - 1 for p in refetched)
    lastmods = dict(revisit.execute("SELECT url, sitemap_lastmod FROM revisit"))
    assert len(lastmods) >= 8 and all(v is not None for v in lastmods.values())  # noindex pages are not tracked
    assert sandbox.report(0.05)["violations"] == 0
