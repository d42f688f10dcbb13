"""The scheduler adapter's own bookkeeping, on a crawler that never crawls."""

from scrapy.utils.test import get_crawler

import settings as base  # crawlproj's project: its defaults and its profiles
from crawlproj.frontier.scheduler import FrontierScheduler


def test_hosts_by_rule_stat_drops_to_zero_when_no_host_follows_the_rule(tmp_path):
    values = {k: getattr(base, k) for k in dir(base) if k.isupper()}
    crawler = get_crawler(settings_dict={**values, "PROFILE": "sandbox", "FRONTIER_SPILL_DIR": str(tmp_path / "spill")})
    crawler.stats.open_spider()
    scheduler = FrontierScheduler.from_crawler(crawler)
    scheduler.hosts.rules.update({"a": "suspended", "b": "min_interval"})
    scheduler._update_stats()
    assert crawler.stats.get_value("frontier/hosts_by_rule/suspended") == 1
    scheduler.hosts.rules["a"] = "min_interval"
    scheduler._update_stats()
    assert crawler.stats.get_value("frontier/hosts_by_rule/suspended") == 0
    assert crawler.stats.get_value("frontier/hosts_by_rule/min_interval") == 2
    scheduler.spill.close()


def test_queue_entries_name_the_spiders_own_methods_as_scrapy_does():
    import pytest
    from scrapy import Request, Spider
    from scrapy.http import FormRequest
    from scrapy.utils.request import request_from_dict

    from crawlproj.frontier.entry import request_entry

    class Shop(Spider):
        name = "shop"

        def parse(self, response):
            pass

        def on_error(self, failure):
            pass

    spider = Shop()
    for request in (Request("http://h.test/a", callback=spider.parse, errback=spider.on_error, priority=3,
                            meta={"depth": 2}, headers={"X": "1"}),
                    Request("http://h.test/b"),
                    FormRequest("http://h.test/c", formdata={"q": "x"}, callback=spider.parse)):
        entry = request_entry(request, spider)
        assert entry == request.to_dict(spider=spider)
        back = request_from_dict(entry, spider=spider)
        assert (back.url, back.callback, back.errback, type(back)) == (
            request.url, request.callback, request.errback, type(request))
    with pytest.raises(ValueError):  # not a method of the spider: cannot be queued, as with Scrapy
        request_entry(Request("http://h.test/d", callback=lambda r: None), spider)


def test_a_request_sent_back_unfetched_keeps_its_importance_and_its_host_active(tmp_path):
    """A dynamic ordering's URL handed out and sent back unfetched (its host's robots.txt came
    first) waits again with the in-links it had, keeps gathering them, stays at its host's back
    queue, and is fetched once. (It had waited untracked in the front tier, its in-links frozen:
    backlinks and OPIC fell to breadth-first's share in bench/ordering.py.)"""
    from scrapy import Request, Spider

    values = {k: getattr(base, k) for k in dir(base) if k.isupper()}
    crawler = get_crawler(Spider, settings_dict={**values, "PROFILE": "sandbox", "PRIORITIZER": "backlinks",
                                                 "FRONTIER_SPILL_DIR": str(tmp_path / "spill")})
    crawler.stats.open_spider()
    scheduler = FrontierScheduler.from_crawler(crawler)
    crawler.spider = Spider("t")
    scheduler.open(crawler.spider)
    url = "http://a.test/page.html"
    for source in range(3):  # three pages link it
        scheduler.enqueue_request(Request(url, meta={"depth": 1}))
    handed = scheduler.next_request()
    assert handed is not None and handed.url == url and handed.meta["backlinks"] == 3
    scheduler.frontier.release("a.test", 0.0)
    assert scheduler.enqueue_request(handed.replace(dont_filter=True))  # sent back: robots.txt first
    assert "a.test" in scheduler.frontier.back  # its host stays active
    backlinks = scheduler.prioritizer.components[0][0]
    scheduler.enqueue_request(Request(url, meta={"depth": 1}))  # one more in-link while it waits
    assert sum(backlinks.table.values()) == 4
    again = scheduler.next_request()
    assert again is not None and again.url == url and again.meta["backlinks"] == 4
    scheduler.frontier.release("a.test", 0.0)
    assert scheduler.next_request() is None  # fetched once: no copy of it goes again
    scheduler.close("finished")
