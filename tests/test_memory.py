"""The crawl's memory: its own readings (crawlproj.extensions.memory), and a real-page crawl that must not grow."""

from __future__ import annotations

import itertools

import pytest

from crawlproj.extensions.memory import RssTrack, milestones, rss_bytes, trim_heap

pytestmark = pytest.mark.slow

MB = 2**20


def test_milestones_are_few_however_long_the_crawl():
    assert list(itertools.islice(milestones(500), 10)) == [500, 1000, 1500, 2000, 5000, 10_000, 25_000, 50_000,
                                                           100_000, 250_000]
    assert sum(1 for m in itertools.takewhile(lambda m: m <= 10**9, milestones(500))) < 25


def test_rss_track_records_milestones_and_the_growth_after_warm_up():
    track = RssTrack(warmup_pages=500, keep=16)
    for pages in range(0, 20_001, 100):
        # Warm-up fills caches (100 MB); afterwards 3 MB per 1,000 pages, with noise.
        rss = 200 * MB + min(pages, 500) * 200 * 1024 + max(0, pages - 500) * 3 * 1024 + (pages % 300) * 1024
        track.add(pages, rss)
    assert sorted(track.at_pages) == [500, 1000, 1500, 2000, 5000, 10_000]
    assert track.at_pages[500] == 200 * MB + 100_000 * 1024 + 200 * 1024
    assert len(track.samples) <= 17 and track.samples[0][0] == 500 and track.samples[-1][0] == 20_000
    assert abs(track.growth_per_1000_pages() - 3 * MB) < 0.2 * MB


def test_rss_track_needs_two_pages_counts_after_warm_up():
    track = RssTrack(warmup_pages=100)
    track.add(50, 10 * MB)
    track.add(100, 20 * MB)
    assert track.growth_per_1000_pages() is None
    track.add(100, 21 * MB)  # the same count again: one sample, the latest
    assert track.growth_per_1000_pages() is None
    track.add(200, 22 * MB)
    assert track.growth_per_1000_pages() == 1000 * MB / 100


def test_this_process_reads_its_resident_set_and_trims_its_heap():
    assert 10 * MB < rss_bytes() < 4096 * MB and rss_bytes(2**22 + 1) == 0
    # 200 MB in small blocks, every 16th kept: the heap is fragmented, and glibc keeps the
    # freed pages between the kept blocks until it is asked to give them back.
    blocks = [bytearray(b"x" * 4000) for _ in range(50_000)]
    kept = blocks[::16]
    del blocks
    before = rss_bytes()
    assert trim_heap()
    assert rss_bytes() < before - 100 * MB
    del kept


# -- a crawl of real pages ---------------------------------------------------------------
def test_a_crawl_of_real_pages_does_not_grow_from_its_500th_to_its_1000th_page(tmp_path):
    """Real documentation pages from nginx, CPU-bound, every default on (near-duplicates, WARC,
    revisit state, render decision): the crawl's own readings of its resident set
    (crawlproj.extensions.memory) must not grow with the pages it has stored. Before the fix of the
    link canonicaliser's memo, one page's parse tree stayed alive per page: about 400 MB over
    these 500 pages. (The slope over long crawls is bench/memory.py's.)"""
    from sandbox.docsites import DOMAIN, HOST_RESOLVE, MEMORY_TEST_SITES, ensure_installed
    from sandbox.harness import error_lines, run_crawl
    from sandbox.servers import NginxServer

    ensure_installed(MEMORY_TEST_SITES)
    with NginxServer({s.name: s.root for s in MEMORY_TEST_SITES}) as nginx:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"http://{s.name}:{nginx.port}{s.start}\n" for s in MEMORY_TEST_SITES))
        result = run_crawl("web", tmp_path, {"seeds": str(seeds)}, {
            "HOST_RESOLVE": HOST_RESOLVE, "ALLOWED_DOMAINS": DOMAIN, "STORE_URI": f"sqlite:///{tmp_path}/crawl.db",
            "CONCURRENT_REQUESTS": 16, "MIN_INTERVAL": 0, "INTERVAL_DURATION_FACTOR": 0,
            "WASEDA_INTERVAL_ENABLED": False, "KEEPALIVE_CLOSE_PAUSE": 0, "DASHBOARD_ENABLED": False,
            "MEMORY_SAMPLE_INTERVAL": 0.5, "CLOSESPIDER_ITEMCOUNT": 1100}, timeout=600)
    assert result.returncode == 0, result.log[-3000:]
    stats = result.stats
    assert stats["item_scraped_count"] >= 1000
    at_500, at_1000 = stats["process/rss_bytes_at_pages/500"], stats["process/rss_bytes_at_pages/1000"]
    assert at_1000 - at_500 < 40 * MB, (at_500 / MB, at_1000 / MB, stats.get("process/rss_growth_per_1000_pages"))
    assert error_lines(result.log) == []


# -- per-host state kept within its settings -----------------------------------------------
def test_the_dashboard_remembers_the_hosts_heard_of_most_recently_and_counts_them_all():
    from crawlproj.dashboard.board import HostBoard

    board = HostBoard(keep=3)
    for host in ("a", "b", "c"):
        board.response(host, 200, None, 1.0)
    board.error("a", "timeout", 2.0)  # heard of again: now the most recent
    board.response("d", 200, None, 3.0)
    board.robots("e", 200, 4.0)
    assert list(board.hosts) == ["a", "d", "e"] and board.seen == 5 and board.hosts["a"]["fetches"] == 1


def test_robots_txt_parsers_are_kept_for_the_configured_hosts_only():
    from scrapy.utils.test import get_crawler
    from twisted.internet.defer import Deferred

    from crawlproj.downloadermiddlewares.robots_txt import RobotsTxtMiddleware
    from crawlproj.politeness.robots import Rfc9309RobotParser

    crawler = get_crawler(settings_dict={"ROBOTSTXT_CACHE_HOSTS": 20, "ROBOTSTXT_OBEY": True,
                                         "ROBOTSTXT_PARSER": "crawlproj.politeness.robots.Rfc9309RobotParser"})
    crawler.stats.open_spider()
    mw = RobotsTxtMiddleware(crawler)
    mw._parsers["fetching.test"] = Deferred()  # a fetch under way is never forgotten
    for i in range(19):
        mw._parsers[f"h{i}.test"] = Rfc9309RobotParser(b"User-agent: *\nDisallow: /x\n")
        mw._expires[f"h{i}.test"] = 1.0
    mw._forget_oldest()
    assert list(mw._parsers)[:2] == ["fetching.test", "h1.test"] and len(mw._parsers) == 19
    assert "h0.test" not in mw._expires and crawler.stats.get_value("robotstxt/forgotten") == 1


def test_dns_staleness_stamps_go_with_the_names_the_cache_dropped(monkeypatch):
    from scrapy.resolver import dnscache
    from twisted.internet import defer
    from twisted.internet.base import ThreadedResolver

    import crawlproj.resolver as mod

    monkeypatch.setattr(ThreadedResolver, "getHostByName", lambda self, name, timeout=(): defer.succeed("192.0.2.1"))
    monkeypatch.setattr(dnscache, "limit", 5)
    resolver = mod.HostResolveResolver(object(), 5, 5.0, [], ttl=60)
    for i in range(40):
        resolver.getHostByName(f"n{i}.test")
    assert 5 <= len(resolver._expires) <= 2 * 5 and all(f"n{i}.test" in resolver._expires for i in range(35, 40))
