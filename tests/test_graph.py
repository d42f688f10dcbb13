from crawlproj.sandbox.graph import SandboxConfig, SandboxWeb


def test_generation_is_deterministic():
    a, b = SandboxWeb(SandboxConfig(hosts=20), 8000), SandboxWeb(SandboxConfig(hosts=20), 8000)
    assert all(a.render(h, k) == b.render(h, k) for h in range(20) for k in range(20))
    c = SandboxWeb(SandboxConfig(hosts=20, seed=2), 8000)
    assert any(a.render(h, 1) != c.render(h, 1) for h in range(20))


def test_power_law_sizes_keep_the_mean():
    web = SandboxWeb(SandboxConfig(hosts=100, pages=30, power_law=1.0))
    sizes = [web.size(h) for h in web.hosts]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 10 * sizes[-1]
    assert abs(sum(sizes) / len(sizes) - 30) < 3


def test_paths_round_trip():
    web = SandboxWeb(SandboxConfig(hosts=2, pages=40))
    for k in range(40):
        assert web.page_index(0, web.path(k)) == k
    assert web.page_index(0, "/p/3.html") is None  # page 3 lives under /private/
    assert web.page_index(0, "/p/99.html") is None
    assert web.host_index("h1.sandbox.test:8080") == 1 and web.host_index("h2.sandbox.test") is None


def test_robots_variants_follow_rfc9309_and_longest_match():
    web = SandboxWeb(SandboxConfig(hosts=6, pages=20))
    kinds = {h: web.specs[h].robots for h in web.hosts}
    assert sorted(kinds.values()) == sorted(["allow", "private", "wildcard", "crawl_delay", "missing", "error"])
    by_kind = {v: k for k, v in kinds.items()}
    assert not web.allowed(by_kind["private"], "/private/3.html")  # product-token group
    assert web.allowed(by_kind["private"], "/private/3.html", agent="otherbot")  # '*' group
    assert not web.allowed(by_kind["wildcard"], "/p/7.cgi") and web.allowed(by_kind["wildcard"], "/p/2.cgi")
    assert web.allowed(by_kind["wildcard"], "/p/7.cgi?x=1")  # '$' anchors the end
    assert web.allowed(by_kind["missing"], "/private/3.html")  # 4xx: no rules
    assert not web.allowed(by_kind["error"], "/")  # 5xx: the whole host is off limits


def test_ground_truth_respects_nofollow_and_depth():
    web = SandboxWeb(SandboxConfig(hosts=10, pages=30))
    full = web.expected_crawl()
    shallow = web.expected_crawl(depth_limit=1)
    assert set(shallow) < set(full) and max(shallow.values()) == 1
    assert set(web.expected_crawl(follow_nofollow=True)) >= set(full)
    assert web.expected_pages() < set(full)  # noindex pages are fetched, not stored


def test_japanese_hosts_encode_in_their_charset():
    web = SandboxWeb(SandboxConfig(hosts=10))
    for h, charset in ((7, "utf-8"), (8, "shift_jis"), (9, "euc-jp")):
        body, headers = web.render(h, 1)
        assert web.page(h, 1).title in body.decode(charset)
        assert headers["Content-Type"].endswith(f"charset={charset}")


def test_ideal_polite_crawler_bound():
    from crawlproj.sandbox.graph import SandboxConfig, SandboxWeb

    web = SandboxWeb(SandboxConfig(hosts=20, pages=30, robots_mix=False, cross_host=0.0, japanese=False))
    # Every host seeded, no discovery: robots.txt at 0, then one page at 5, 10, ..., 55 s.
    assert web.ideal_polite_fetches(web.seeds(), 5.0, 60.0) == 20 * 11
    # One seed and no cross-host links: only the seed host is ever crawled.
    assert web.ideal_polite_fetches(web.seeds()[:1], 5.0, 60.0) == 11
    linked = SandboxWeb(SandboxConfig(hosts=20, pages=30, robots_mix=False, cross_host=0.5, japanese=False))
    one_seed = linked.ideal_polite_fetches(linked.seeds()[:1], 5.0, 60.0)
    assert 11 < one_seed < 20 * 11  # discovery takes time
