"""Rendering in real crawls: the sandbox's JavaScript-only hosts, a real Chromium, the server's record."""

import sqlite3
from collections import Counter

import pytest

from sandbox import harness

#: Timed tests (tests/conftest.py) whose crawls start Chromium run one after another in one
#: process (`make test` shares tests with --dist loadgroup): a browser's renders beside
#: another browser's are slower than the timeouts these tests judge.
pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.xdist_group("chromium")]

INTERVAL = 0.05


def test_javascript_pages_are_rendered_politely_and_static_pages_never(sandbox_factory, tmp_path):
    # No cross-host links: the pages of a JavaScript host can only be found through its rendered links.
    sandbox = sandbox_factory("--hosts", "20", "--pages", "8", "--js-mix", "--cross-host", "0")
    web = sandbox.web
    conn, result = harness.crawl_sandbox(sandbox, tmp_path, MIN_INTERVAL=INTERVAL, RENDER_HOST_SWITCH=2)
    stats = result.stats
    js_hosts = {web.host_name(h) for h in web.hosts if web.specs[h].js}
    assert len(js_hosts) == 6
    pages = {url: (host, rendered, title, text_length) for url, host, rendered, title, text_length in
             conn.execute("SELECT url, host, rendered, title, text_length FROM pages")}
    # Every page is found, including those linked only from script-built DOMs (spa, fetch() of JSON, bare).
    assert set(pages) == web.expected_pages()
    reachable_js = [u for u, (host, *_) in pages.items() if host in js_hosts and not u.endswith("/")]
    assert len(reachable_js) >= 15
    for url, (host, rendered, title, text_length) in pages.items():
        h = web.host_index(host)
        k = web.page_index(h, "/" + url.split("/", 3)[3])
        if host in js_hosts:
            # The stored page is the DOM after the script ran: its title and text, not "Loading...".
            assert rendered == 1 and title == web.page(h, k).title, (url, title)
            # The rendered text, not the empty shell: within 2% (the extractor leaves out an <h1> that
            # is the mount node's first child, 17 characters here; a finding, not yet fixed).
            assert abs(text_length - len(web.main_text(h, k))) <= max(10, 0.02 * len(web.main_text(h, k))), (url, text_length)
        else:
            assert rendered == 0, url  # a static page is never rendered
    assert stats["render/rendered"] == sum(1 for _, r, _, _ in pages.values() if r)
    assert stats["render/static_pages"] >= sum(1 for _, r, _, _ in pages.values() if not r)
    records = sandbox.records()
    page_fetches = Counter((r.host, r.path) for r in records if r.path != "/robots.txt")
    # Static hosts: each page fetched exactly once (their pages load no script: nothing to sample).
    # JavaScript hosts: static-first until the host switches to direct rendering after
    # RENDER_HOST_SWITCH shells, then one fetch a page. A static-first page's render is handed
    # the document its static fetch got: the server sees each page's document once.
    for (host, path), n in page_fetches.items():
        if host not in js_hosts:
            assert n == 1, (host, path, n)
    for host in js_hosts:
        documents = sum(n for (h, p), n in page_fetches.items() if h == host and not p.startswith(("/static/", "/api/")))
        stored = sum(1 for h, *_ in pages.values() if h == host)
        assert documents == stored, (host, documents, stored)
    # Every render but those of hosts rendered directly was handed its static document.
    assert stats["render/documents_reused"] == stats["render/rendered"] - stats["render/rendered_by/host"] > 0
    rendered_hosts = {h for h, r, *_ in pages.values() if r}
    # The app's script went to the server once per host; every later render took it from the cache.
    assert all(page_fetches[(host, "/static/app.js")] == 1 for host in rendered_hosts)
    assert stats["render/asset_cache_hits"] == stats["render/pages"] - len(rendered_hosts)
    assert stats["render/hosts_to_render"] == len(rendered_hosts)
    assert {k.split("/", 2)[2] for k in stats if k.startswith("render/host_mode/")} == rendered_hosts
    # Every render was compared with its page's static HTML, and each showed more.
    assert stats["render/evidence/comparisons"] == stats["render/evidence/gains"] == stats["render/rendered"]
    # The browser's sub-requests reached the server only as scripts and JSON; images and CSS were blocked.
    paths = {path for _, path in page_fetches}
    assert "/static/app.js" in paths and any(p.startswith("/api/") for p in paths)
    assert not [p for p in paths if p.endswith((".png", ".css"))]
    assert stats["render/blocked/image"] == stats["render/blocked/stylesheet"] == stats["render/pages"]
    # Politeness on the server's record, sub-requests included: never two at once, never too soon.
    report = sandbox.report(INTERVAL)
    assert report["max_concurrency"] == 1 and report["violations"] == 0, report
    # A page that rendered well is kept for the next render: most renders open no page.
    assert stats["playwright/page_count"] == stats["render/pages"] - stats["render/pages_reused"] <= 4
    assert "render/pages_closed_after_error" not in stats
    assert stats["playwright/page_count/max_concurrent"] <= 4


def test_render_mode_never_starts_no_browser(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "10", "--pages", "4", "--js-mix", "--cross-host", "0", "--no-robots-mix")
    conn, result = harness.crawl_sandbox(sandbox, tmp_path, MIN_INTERVAL=0.02, RENDER_MODE="never",
                                         CHROMIUM_PATH="/nonexistent")
    assert not [k for k in result.stats if k.startswith(("render/", "playwright/"))]
    assert conn.execute("SELECT COUNT(*) FROM pages WHERE rendered = 1").fetchone()[0] == 0
    # Without rendering, a JavaScript host yields its shell root page only.
    js_hosts = [sandbox.web.host_name(h) for h in sandbox.web.hosts if sandbox.web.specs[h].js]
    for host in js_hosts:
        assert conn.execute("SELECT COUNT(*) FROM pages WHERE host = ?", (host,)).fetchone()[0] == 1


def test_the_browser_is_restarted_past_its_memory_budget_and_rendering_goes_on(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "6", "--pages", "6", "--js-mix", "--cross-host", "0", "--no-robots-mix")
    web = sandbox.web
    # A budget any Chromium passes: restarted after its first sampled render, and again later.
    conn, result = harness.crawl_sandbox(sandbox, tmp_path, MIN_INTERVAL=INTERVAL, RENDER_MODE="always",
                                         RENDER_BROWSER_MAX_RSS=2**20)
    stats = result.stats
    assert stats["render/browser_restarts"] >= 1 and stats["playwright/browser_count"] == stats["render/browser_restarts"] + 1
    rendered = conn.execute("SELECT COUNT(*) FROM pages WHERE rendered = 1").fetchone()[0]
    assert rendered == len(web.expected_pages()) == stats["render/rendered"]  # no render lost to a restart
    assert not [k for k in stats if k.startswith("crawlproj/fetch_errors/")]


def test_a_render_that_times_out_rests_its_host_for_the_servers_time_not_the_browsers(sandbox_factory, tmp_path):
    """A page whose script never ends is given up on at RENDER_TIMEOUT (render_timeout), and its
    host rests after what its server took (a fast document), not ten times the render."""
    sandbox = sandbox_factory("--hosts", "2", "--pages", "3", "--cross-host", "0", "--no-robots-mix",
                              "--host", "1:js=spin")
    # The browser at its default priority (SCHED_IDLE, off one CPU) gets only what other processes
    # leave: beside two other timed tests an ordinary page's render took over 5 s (CI, stop 70),
    # and both hosts' pages timed out. This test judges the render's deadline, not the priority.
    web, timeout = sandbox.web, 5.0
    conn, result = harness.crawl_sandbox(sandbox, tmp_path, MIN_INTERVAL=INTERVAL, RENDER_MODE="always",
                                         RENDER_BROWSER_PRIORITY="normal", RENDER_BROWSER_SPARE_CPUS=0,
                                         RENDER_TIMEOUT=timeout, RENDER_NAVIGATION_TIMEOUT=timeout, RETRY_TIMES=0,
                                         INTERVAL_DURATION_FACTOR=10)
    spin = web.host_name(1)
    kinds = {kind for (kind,) in conn.execute("SELECT kind FROM fetch_errors WHERE host = ?", (spin,))}
    assert kinds == {"render_timeout"}, kinds
    documents = [r for r in sandbox.records() if r.host == spin and r.path != "/robots.txt"
                 and not r.path.startswith("/static/")]
    assert len(documents) >= 2, documents
    # The next document came about one render later: a rest of ten renders (50 s) would show here.
    gaps = [b.arrival - a.finish for a, b in zip(documents, documents[1:])]
    assert max(gaps) < 2 * timeout + 3, gaps
    assert result.stats["finish_reason"] == "finished"
    # A page given up on is closed, never kept for the next render (its script would spin on);
    # the other host's renders took the page its last render left.
    stats = result.stats
    assert stats["render/pages_closed_after_error"] >= stats["render/timeouts"] >= 2
    assert stats["render/pages_reused"] >= 1
    assert stats["playwright/page_count"] == stats["render/pages"] - stats["render/pages_reused"]



def test_the_render_timeout_counts_from_when_the_browser_has_the_page_open(sandbox_factory, tmp_path, monkeypatch):
    """Opening a page (a new context, a renderer process) is the browser's cost, not the page's:
    a render is not given up on because its page took longer to open than RENDER_TIMEOUT; a
    browser that cannot open one within RENDER_NAVIGATION_TIMEOUT is, and says so."""
    sandbox = sandbox_factory("--hosts", "1", "--pages", "2", "--cross-host", "0", "--no-robots-mix")
    handler = "tests.slow_browser.SlowToOpenPages"
    # At normal priority: the render itself must fit RENDER_TIMEOUT beside other test processes.
    common = dict(MIN_INTERVAL=INTERVAL, RENDER_MODE="always", RETRY_TIMES=0, RENDER_BROWSER_PRIORITY="normal",
                  RENDER_BROWSER_SPARE_CPUS=0, DOWNLOAD_HANDLERS={"http": handler, "https": handler})
    monkeypatch.setenv("TEST_PAGE_OPEN_DELAY", "6")
    conn, result = harness.crawl_sandbox(sandbox, tmp_path / "slow", RENDER_TIMEOUT=4.0,
                                         RENDER_NAVIGATION_TIMEOUT=20.0, **common)
    assert "render/timeouts" not in result.stats, result.stats
    assert result.stats["render/rendered"] == len(sandbox.web.expected_pages()) >= 2
    monkeypatch.setenv("TEST_PAGE_OPEN_DELAY", "30")
    result = harness.run_crawl("web", tmp_path / "stuck", args={"seeds": sandbox.seeds_file}, settings={
        "HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{tmp_path / 'stuck.db'}",
        "RENDER_TIMEOUT": 60.0, "RENDER_NAVIGATION_TIMEOUT": 2.0, **common})
    assert result.returncode == 1 and result.stats["render/timeouts"] == 1, result.log[-2000:]
    (message,) = sqlite3.connect(tmp_path / "stuck.db").execute("SELECT message FROM fetch_errors").fetchone()
    assert message.startswith("the browser did not open a page for http://") and message.endswith("within 2 s"), message



def test_what_a_rendered_page_loaded_is_archived_beside_it_never_stored_as_a_page(sandbox_factory, tmp_path):
    """With requisites on, a render's scripts and the JSON its fetch() got are archived as the
    browser had them (Browsertrix's way), each once, and not asked of the server again."""
    from warcio.archiveiterator import ArchiveIterator

    sandbox = sandbox_factory("--hosts", "8", "--pages", "4", "--js-mix", "--cross-host", "0", "--no-robots-mix")
    web = sandbox.web
    conn, result = harness.crawl_sandbox(sandbox, tmp_path, MIN_INTERVAL=INTERVAL, REQUISITES_ENABLED=True)
    js_hosts = {web.host_name(h) for h in web.hosts if web.specs[h].js}
    archived: Counter = Counter()
    for path in (tmp_path / "warc").glob("*.warc.gz"):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type in ("response", "revisit"):
                    archived[record.rec_headers.get_header("WARC-Target-URI").split("/", 2)[2]] += 1
    rendered_hosts = {host for (host,) in conn.execute("SELECT host FROM pages WHERE rendered = 1")}
    assert rendered_hosts and rendered_hosts <= js_hosts
    for host in rendered_hosts:
        port_host = next(k.split("/")[0] for k in archived if k.split("/")[0].split(":")[0] == host)
        assert archived[f"{port_host}/static/app.js"] == 1, host  # once, though every page ran it
    assert any("/api/" in k for k in archived)  # what fetch() got
    assert result.stats["crawlproj/requisites/rendered"] >= len(rendered_hosts)
    stored = [url for (url,) in conn.execute("SELECT url FROM pages")]
    assert not [u for u in stored if "/api/" in u or u.endswith(".js")]
    fetches = Counter((r.host, r.path) for r in sandbox.records())
    assert all(fetches[(host, "/static/app.js")] == 1 for host in rendered_hosts)  # the browser's copy served
    report = sandbox.report(INTERVAL)
    assert report["max_concurrency"] == 1 and report["violations"] == 0, report
