"""The spider's link filter: which links become requests, and how each is counted."""

import asyncio

from scrapy.utils.test import get_crawler

from crawlproj.content.page import ExtractedLink
from crawlproj.scope import Scope
from crawlproj.spiders.link_filter import LinkFilter
from crawlproj.stats_collector import CrawlStatsCollector


def test_a_pages_links_are_filtered_and_each_reason_counted_once_a_page():
    calls = []
    crawler = get_crawler()
    links = [ExtractedLink(f"http://a.test/{n}", "", n == 3, "a") for n in range(6)]
    links += [ExtractedLink("http://a.test/0", "", False, "a"), ExtractedLink("http://b.test/x", "", False, "a")]
    for _ in range(40):  # a long page: the counts stay one call per reason
        links.append(ExtractedLink("http://c.test/y", "", False, "a"))

    async def never() -> bool:
        return False

    link_filter = LinkFilter(crawler, False, lambda key, n=1: calls.append((key, n)))
    followed = asyncio.run(link_filter.follow(links, Scope(domains=("a.test",)), never))

    assert followed == ["http://a.test/0", "http://a.test/1", "http://a.test/2", "http://a.test/4", "http://a.test/5"]
    assert sorted(calls) == [("nofollow_skipped", 1), ("out_of_scope/domain", 41)]


def test_a_remote_url_seen_filter_is_asked_once_a_page_on_a_thread_of_its_own():
    """A remote filter's round trip a page held a worker's reactor 7% of its time (two workers)."""
    import threading

    from scrapy import signals

    from crawlproj import signals as crawl_signals

    calls, asked = [], []
    crawler = get_crawler()

    def seen_many(urls):
        asked.append((threading.current_thread(), list(urls)))
        return {u for u in urls if u.endswith("/1")}

    crawler.signals.connect(lambda: seen_many, signal=crawl_signals.urls_seen_test, weak=False)
    links = [ExtractedLink(f"http://a.test/{n}", "", False, "a") for n in range(3)]

    async def never() -> bool:
        return False

    link_filter = LinkFilter(crawler, False, lambda key, n=1: calls.append((key, n)))
    followed = asyncio.run(link_filter.follow(links, Scope(domains=("a.test",)), never))
    assert followed == ["http://a.test/0", "http://a.test/2"] and calls == [("links_seen", 1)]
    assert len(asked) == 1 and asked[0][0] is not threading.main_thread() and len(asked[0][1]) == 3
    crawler.signals.send_catch_log(signals.spider_closed)
    assert link_filter._asking.closed


def test_the_crawl_counts_with_plain_attribute_lookups_and_still_takes_a_spider_argument(recwarn):
    from crawlproj import defaults

    crawler = get_crawler(settings_dict={"STATS_CLASS": defaults.STATS_CLASS})
    crawler._apply_settings()
    stats = crawler.stats
    assert isinstance(stats, CrawlStatsCollector)
    assert type(stats).__getattribute__ is object.__getattribute__  # not Scrapy's hook, which raises on each lookup
    stats.inc_value("pages")
    stats.inc_value("pages", 2, spider=None)
    assert stats.get_value("pages") == 3
    assert not [w for w in recwarn if "spider" in str(w.message)]
