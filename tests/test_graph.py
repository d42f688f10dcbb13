from sandbox.graph import SandboxConfig, SandboxWeb


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
    from sandbox.graph import SandboxConfig, SandboxWeb

    web = SandboxWeb(SandboxConfig(hosts=20, pages=30, robots_mix=False, cross_host=0.0, japanese=False))
    # Every host seeded, no discovery: robots.txt at 0, then one page at 5, 10, ..., 55 s.
    assert web.ideal_polite_fetches(web.seeds(), 5.0, 60.0) == 20 * 11
    # One seed and no cross-host links: only the seed host is ever crawled.
    assert web.ideal_polite_fetches(web.seeds()[:1], 5.0, 60.0) == 11
    linked = SandboxWeb(SandboxConfig(hosts=20, pages=30, robots_mix=False, cross_host=0.5, japanese=False))
    one_seed = linked.ideal_polite_fetches(linked.seeds()[:1], 5.0, 60.0)
    assert 11 < one_seed < 20 * 11  # discovery takes time


def test_content_families_give_labelled_near_duplicates_mirrors_and_templates():
    from crawlproj.content.near_duplicates import jaccard, shingles
    from crawlproj.content.extract import title_and_text
    from crawlproj.content.page import ParsedPage
    from sandbox.graph import VARIANT_EDITS

    web = SandboxWeb(SandboxConfig(hosts=20, pages=20, content_mix=True, robots_mix=False))
    kinds = {i: (s.content, s.mirror_of) for i, s in enumerate(web.specs) if s.content}
    assert kinds[2] == ("variants", -1) and kinds[7] == ("variants", -1) and web.specs[7].japanese
    assert kinds[3] == ("mirror", 2) and kinds[8] == ("mirror", 7) and kinds[0][0] == kinds[10][0] == "template"
    # Members 0 and 1 of a family are byte-identical; later members drift away as more words are edited.
    for host in (2, 7):
        assert web.render(host, 1)[0] == web.render(host, 2)[0]
        base = shingles(web.main_text(host, 1))
        similarity = [jaccard(base, shingles(web.main_text(host, 1 + m))) for m in range(len(VARIANT_EDITS))]
        assert similarity[:2] == [1.0, 1.0] and similarity[-1] < 0.3
        assert all(a >= b for a, b in zip(similarity, similarity[1:])), similarity
    # A mirror has its original's pages and text under its own name (and its own charset).
    assert web.size(8) == web.size(7) and web.main_text(8, 5) == web.main_text(7, 5)
    assert web.render(8, 5)[0] != web.render(7, 5)[0] and web.page(8, 0).links[0].target.startswith(web.origin(8))
    # Template hosts share most of their bytes but not their main text.
    a, b = web.render(0, 4)[0], web.render(10, 4)[0]
    visible = [title_and_text(ParsedPage(body.decode()))[1] for body in (a, b)]
    assert len(a) > 20_000 and jaccard(shingles(visible[0]), shingles(visible[1])) > 0.8
    assert jaccard(shingles(web.main_text(0, 4)), shingles(web.main_text(10, 4))) < 0.05
    # Every page of the families is reachable.
    assert len(web.expected_crawl()) >= 0.95 * sum(web.size(h) for h in web.hosts)


def test_importance_web_pagerank_ground_truth():
    """SandboxWeb.pagerank() sums to 1 over the fetchable pages; preferential links concentrate
    it, the more so the smaller the share of links that go to any page (importance_tail)."""

    def top_tenth(**kwargs) -> float:
        web = SandboxWeb(SandboxConfig(hosts=20, pages=20, out_links=8, cross_host=0.3, robots_mix=False, **kwargs))
        rank = web.pagerank()
        assert set(rank) == set(web.expected_crawl()) and abs(sum(rank.values()) - 1) < 1e-9
        return sum(sorted(rank.values(), reverse=True)[: len(rank) // 10])

    flat, long_tail, concentrated = top_tenth(), top_tenth(importance=True), top_tenth(importance=True,
                                                                                       importance_tail=0.0)
    assert flat < long_tail < concentrated and concentrated > 0.4
