from protego import Protego

from crawlproj.politeness.robots import DISALLOW_ALL, MAX_ROBOTS_BYTES, robots_body


def test_rfc9309_status_rules():
    body = b"User-agent: *\nDisallow: /x\n"
    assert robots_body(200, body) == body
    assert robots_body(404, body) == b"" and robots_body(401, body) == b""  # 4xx: no rules
    assert robots_body(503, body) == DISALLOW_ALL and robots_body(500, b"") == DISALLOW_ALL
    assert not Protego.parse(DISALLOW_ALL.decode()).can_fetch("http://h.test/", "crawlproj")


def test_oversized_robots_is_cut():
    huge = b"User-agent: *\n" + b"Disallow: /a\n" * 100_000
    assert len(robots_body(200, huge)) == MAX_ROBOTS_BYTES


def test_robots_txt_is_fetched_again_after_its_ttl_and_the_new_rules_apply(sandbox_factory, tmp_path):
    import subprocess
    import time

    from crawlproj.sandbox.harness import PROJECT_DIR, crawl_command

    sandbox = sandbox_factory("--hosts", "1", "--pages", "40", "--no-robots-mix", "--cross-host", "0")
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{tmp_path}/c.db",
                "MIN_INTERVAL": 0.1, "INTERVAL_DURATION_FACTOR": 0, "ROBOTSTXT_TTL": 1.0}
    proc = subprocess.Popen(crawl_command("web", {"seeds": sandbox.seeds_file}, settings), cwd=PROJECT_DIR,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while sum(r.path.startswith("/p/") for r in sandbox.records()) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        changed = sandbox.set_robots(0, "User-agent: *\nDisallow: /p/\n")
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    records = sorted(sandbox.records(), key=lambda r: r.arrival)
    robots = [r for r in records if r.path == "/robots.txt"]
    assert len(robots) >= 2
    assert all(b.arrival - a.finish >= 1.0 - 0.2 for a, b in zip(robots, robots[1:]))  # not before the TTL
    refetch = next(r for r in robots if r.arrival > changed)
    assert refetch.arrival - changed < 1.0 + 0.5  # within a TTL (plus an interval) of the change
    assert not [r for r in records if r.path.startswith("/p/") and r.arrival > refetch.finish]  # new rules hold
    assert sandbox.report(0.1)["violations"] == 0  # the robots.txt fetches kept the interval too


def test_sitemaps_from_robots_txt_seed_the_crawl(sandbox_factory, tmp_path):
    import sqlite3

    from crawlproj.sandbox.harness import run_crawl

    sandbox = sandbox_factory("--hosts", "2", "--pages", "12", "--no-robots-mix", "--out-links", "0")
    base = {"HOST_RESOLVE": sandbox.host_resolve, "MIN_INTERVAL": 0.02, "DEPTH_LIMIT": 1}
    # Hop limit 1: the root and its two children, unless the sitemaps seed the rest.
    run_crawl("web", tmp_path / "off", args={"seeds": sandbox.seeds_file},
              settings={**base, "STORE_URI": f"sqlite:///{tmp_path}/off.db"})
    with sqlite3.connect(tmp_path / "off.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0] == 2 * 3
    sandbox.reset()
    result = run_crawl("web", tmp_path / "on", args={"seeds": sandbox.seeds_file},
                       settings={**base, "STORE_URI": f"sqlite:///{tmp_path}/on.db", "ROBOTSTXT_SITEMAPS": True})
    with sqlite3.connect(tmp_path / "on.db") as conn:
        stored = {u for (u,) in conn.execute("SELECT url FROM pages")}
    web = sandbox.web
    assert stored == {web.url(h, k) for h in (0, 1) for k in range(12) if not web.page(h, k).meta_noindex}
    assert result.stats["robotstxt/sitemaps_seeded"] == 2
    assert sandbox.report(0.02)["violations"] == 0  # the sitemap fetches kept the interval


def test_robots_txt_redirects_stop_after_five_and_then_count_as_unavailable(sandbox_factory, tmp_path):
    from crawlproj.sandbox.harness import crawl_sandbox

    sandbox = sandbox_factory("--hosts", "2", "--pages", "5", "--no-robots-mix", "--cross-host", "0",
                              "--host", "1:robots=redirect")
    conn, _ = crawl_sandbox(sandbox, tmp_path, MIN_INTERVAL=0.02)
    robots = [r for r in sandbox.records() if r.host == "h1.sandbox.test" and r.path.startswith("/robots.txt")]
    assert len(robots) == 1 + 5  # the first request and five redirects, no more
    stored = {u for (u,) in conn.execute("SELECT url FROM pages WHERE host = 'h1.sandbox.test'")}
    assert stored == {u for u in sandbox.web.expected_pages() if "//h1." in u} and stored  # allow all
