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

    from sandbox.harness import PROJECT_DIR, crawl_command

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

    from sandbox.harness import run_crawl

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
    from sandbox.harness import crawl_sandbox

    sandbox = sandbox_factory("--hosts", "2", "--pages", "5", "--no-robots-mix", "--cross-host", "0",
                              "--host", "1:robots=redirect")
    conn, _ = crawl_sandbox(sandbox, tmp_path, MIN_INTERVAL=0.02)
    robots = [r for r in sandbox.records() if r.host == "h1.sandbox.test" and r.path.startswith("/robots.txt")]
    assert len(robots) == 1 + 5  # the first request and five redirects, no more
    # Each hop is a visit of its own, paced by the frontier (they once came 1.3 ms apart).
    assert min(b.arrival - a.finish for a, b in zip(robots, robots[1:])) >= 0.02 - 0.001
    stored = {u for (u,) in conn.execute("SELECT url FROM pages WHERE host = 'h1.sandbox.test'")}
    assert stored == {u for u in sandbox.web.expected_pages() if "//h1." in u} and stored  # allow all


# -- RFC 9309, read from its text and the reference parser's documented behaviour ---------

from crawlproj.politeness.robots import is_allowed  # noqa: E402

UA = "crawlproj/0.1 (+https://example.org/crawler)"


def allowed(robots_txt, path, user_agent=UA):
    return is_allowed(robots_txt, user_agent, "http://h.test" + path)


def test_robots_txt_itself_is_always_allowed():
    assert allowed("User-agent: *\nDisallow: /\n", "/robots.txt")
    assert not allowed("User-agent: *\nDisallow: /\n", "/robots.txt.bak")


def test_the_product_token_matches_group_names_exactly_and_case_insensitively():
    rules = "User-agent: CRAWLPROJ\nDisallow: /mine\n\nUser-agent: *\nDisallow: /all\n"
    assert not allowed(rules, "/mine") and allowed(rules, "/all")  # our group only, not the * group
    assert not allowed(rules, "/all", "otherbot/1.0") and allowed(rules, "/mine", "otherbot/1.0")
    # A group named for a prefix of our token, or a longer name, is someone else's.
    assert allowed("User-agent: crawl\nDisallow: /\n", "/x") and allowed("User-agent: crawlprojx\nDisallow: /\n", "/x")
    # The reference parser reads a group's name as its leading letters, '-' and '_'.
    assert not allowed("User-agent: crawlproj/2.0\nDisallow: /x\n", "/x")
    assert not allowed("User-agent: crawlproj images\nDisallow: /x\n", "/x")


def test_consecutive_user_agent_lines_share_a_group_and_groups_of_one_agent_merge():
    rules = "User-agent: a\nUser-agent: crawlproj\nDisallow: /one\n\nUser-agent: b\nDisallow: /b\n" \
            "User-agent: crawlproj\nDisallow: /two\n"
    assert not allowed(rules, "/one") and not allowed(rules, "/two") and allowed(rules, "/b")


def test_a_line_without_a_colon_is_skipped_and_does_not_end_the_group():
    rules = "User-agent: crawlproj\nDisallow /skipped\nthis line means nothing\nDisallow: /kept\n"
    assert allowed(rules, "/skipped") and not allowed(rules, "/kept")
    assert allowed("Disallow: /orphan\nUser-agent: *\nAllow: /\n", "/orphan")  # a rule before any group


def test_byte_order_mark_line_endings_and_the_500_kib_limit():
    for ending in ("\n", "\r", "\r\n"):
        body = "\ufeffUser-agent: *" + ending + "Disallow: /x" + ending
        assert not allowed(body.encode("utf-8"), "/x") and allowed(body, "/y")
    padding = "# " + "x" * 1000 + "\n"
    late = ("User-agent: *\n" + padding * 520 + "Disallow: /late\n").encode()
    assert len(late) > 500 * 1024 and allowed(late, "/late")  # past 500 KiB: not read


def test_paths_match_by_longest_rule_allow_on_a_tie_wildcards_and_percent_encoding():
    assert not allowed("User-agent: *\nAllow: /p/\nDisallow: /p/x.gif\n", "/p/x.gif")
    assert allowed("User-agent: *\nAllow: /p/\nDisallow: /p/x.gif\n", "/p/y.gif")
    assert allowed("User-agent: *\nDisallow: /page\nAllow: /page\n", "/page")  # a tie: allow wins
    assert not allowed("User-agent: *\nDisallow: /*.gif$\n", "/a/b.gif")
    assert allowed("User-agent: *\nDisallow: /*.gif$\n", "/a/b.gif?size=2")
    assert allowed("User-agent: *\nDisallow: /\nAllow: /$\n", "/") and not allowed("User-agent: *\nDisallow: /\nAllow: /$\n", "/a")
    # RFC 9309 2.2.2's table: non-ASCII and percent-encoded forms are one path.
    assert not allowed("User-agent: *\nDisallow: /foo/bar/ツ\n", "/foo/bar/%E3%83%84")
    assert not allowed("User-agent: *\nDisallow: /foo/bar/%E3%83%84\n", "/foo/bar/ツ")
    assert not allowed("User-agent: *\nDisallow: /foo/bar/%62%61%7A\n", "/foo/bar/baz")


def test_no_group_for_us_and_no_star_group_allows_everything():
    assert allowed("User-agent: otherbot\nDisallow: /\n", "/x") and allowed("", "/x")
