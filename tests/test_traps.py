"""Trap rules (pure)."""

from crawlproj.traps import SiteCap, compile_patterns, is_dynamic, query_params, repeated_segments


def test_dynamic_pages_by_query_or_pattern():
    patterns = compile_patterns([r"\.cgi\b", r"\.php\b", r"\.aspx?\b", r"/cgi-bin/"])
    assert is_dynamic("http://h/cal?m=1", patterns)
    assert is_dynamic("http://h/x.CGI", patterns) and is_dynamic("http://h/a.aspx", patterns)
    assert is_dynamic("http://h/cgi-bin/x", patterns)
    assert not is_dynamic("http://h/p/1.html", patterns) and not is_dynamic("http://h/php-guide/", patterns)
    assert not is_dynamic("http://h/x.cgi", compile_patterns([]))  # no patterns: only a query counts


def test_repeated_segments_and_query_params():
    assert repeated_segments("/a/b/a/b/a/") == 3
    assert repeated_segments("/loop/loop/") == 2 and repeated_segments("/") == 0
    assert query_params("http://h/?a=1&b=2&&c") == 3 and query_params("http://h/") == 0


def test_redirects_through_dynamic_urls_meet_the_cgi_hop_limit_in_the_downloader():
    import pytest
    from scrapy import Request
    from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
    from scrapy.exceptions import IgnoreRequest
    from scrapy.http import Response
    from scrapy.utils.test import get_crawler

    from crawlproj.downloadermiddlewares.cgi_hop_limit import CgiHopLimitMiddleware

    crawler = get_crawler(settings_dict={"CGI_HOP_LIMIT": 2, "DYNAMIC_URL_PATTERNS": [r"\.cgi\b"]})
    crawler.stats.open_spider()
    redirect, hops = RedirectMiddleware.from_crawler(crawler), CgiHopLimitMiddleware.from_crawler(crawler)

    def follow(request, target):  # Scrapy's own redirect middleware makes the next request
        return redirect.process_response(request, Response(request.url, status=302, headers={"Location": target}))

    seed = Request("http://h.test/cal.cgi?d=1")  # a seeded URL: never passed the spider middleware
    assert hops.process_request(seed) is None
    second = follow(seed, "http://h.test/cal.cgi?d=2")
    assert hops.process_request(second) is None and second.meta["cgi_hops"] == 1
    assert hops.process_request(second.replace()) is None and second.meta["cgi_hops"] == 1  # a retry: not again
    third = follow(second, "http://h.test/cal.cgi?d=3")
    assert hops.process_request(third) is None and third.meta["cgi_hops"] == 2
    fourth = follow(third, "http://h.test/cal.cgi?d=4")
    with pytest.raises(IgnoreRequest, match="CGI hop limit"):
        hops.process_request(fourth)
    assert crawler.stats.get_value("traps/cgi_hop_limit") == 1
    # A redirect from a static URL resets the count, as a link from a static page does.
    static = follow(second, "http://h.test/archive.html")
    assert hops.process_request(static) is None and static.meta["cgi_hops"] == 2
    onwards = follow(static, "http://h.test/cal.cgi?d=9")
    assert hops.process_request(onwards) is None and onwards.meta["cgi_hops"] == 0


def test_the_site_cap_admits_that_many_new_urls_per_host():
    cap = SiteCap(3)
    assert [cap.admit("a") for _ in range(5)] == [True, True, True, False, False]
    assert cap.admit("b") and cap.admitted == {"a": 3, "b": 1}
    assert all(SiteCap(0).admit("a") for _ in range(100))  # 0 is no cap
    assert SiteCap(0).admitted == {}  # and nothing counted


def test_the_site_cap_keeps_the_counts_of_the_hosts_admitted_to_last():
    cap = SiteCap(3, hosts=2)
    assert [cap.admit("busy") for _ in range(3)] == [True] * 3
    for host in ("a", "busy", "b", "busy"):  # busy stays among the last two, and capped
        cap.admit(host)
    assert not cap.admit("busy") and set(cap.admitted) == {"b", "busy"}
    for host in ("c", "d"):
        cap.admit(host)
    assert set(cap.admitted) == {"c", "d"} and cap.admit("busy")  # gone for two others: counted from 0


def test_a_pages_text_seen_before_on_its_host_is_a_copy_and_the_memory_is_bounded():
    from crawlproj.traps import SeenTexts

    seen = SeenTexts(keep=3)
    assert not seen.copy("a.test", b"1" * 32) and seen.copy("a.test", b"1" * 32)
    assert not seen.copy("b.test", b"1" * 32)  # the same body on another host: a mirror, judged elsewhere
    assert not seen.copy("a.test", b"2" * 32) and not seen.copy("a.test", b"3" * 32)  # the oldest goes
    assert not seen.copy("a.test", b"1" * 32)
    assert not SeenTexts(keep=0).copy("a.test", b"x")


def test_a_host_of_mostly_copies_is_slowed_then_capped():
    from crawlproj.traps import CopyShare

    share = CopyShare(min_pages=10, slow_share=0.5, cap_share=0.9)
    verdicts = [share.record("copies.test", copy=n >= 4) for n in range(9)]
    assert verdicts == [None] * 9  # too few pages to judge
    assert share.record("copies.test", copy=True) == "slow"  # 6 copies of 10 pages
    assert share.record("copies.test", copy=False) is None  # an original page is never rested
    verdicts = [share.record("copies.test", copy=True) for _ in range(60)]
    # 5 originals: capped at the first page where copies are 0.9 of the pages (50 pages)
    assert verdicts[:38] == ["slow"] * 38 and verdicts[38] == "cap" and set(verdicts[39:]) == {None}
    assert "copies.test" in share.capped
    # A host with a few copies among many pages is neither.
    mixed = CopyShare(min_pages=10, slow_share=0.5, cap_share=0.9)
    assert {mixed.record("mixed.test", copy=n % 4 == 0) for n in range(100)} == {None}
    assert CopyShare(10, 0, 0).record("x.test", True) is None


def test_the_copy_page_rule_says_whether_a_page_is_a_copy_and_what_its_host_calls_for():
    from crawlproj.traps import CopyPages

    rule = CopyPages(keep=100, min_pages=4, slow_share=0.4, cap_share=0.9)
    assert rule.page("a.test", None) == (False, None)  # no text: neither counted
    assert [rule.page("a.test", b"%d" % n * 16) for n in range(3)] == [(False, None)] * 3
    assert rule.page("a.test", b"0" * 16) == (True, None)  # a copy; 1 of 4 pages
    assert rule.page("a.test", b"1" * 16) == (True, "slow")  # 2 of 5
    assert rule.page("b.test", b"1" * 16) == (False, None)  # another host's text is its own
    assert [rule.page("a.test", b"2" * 16)[1] for _ in range(40)][-1] is None  # capped: no more verdicts
    assert "a.test" in rule.share.capped
