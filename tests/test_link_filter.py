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
