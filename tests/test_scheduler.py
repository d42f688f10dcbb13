"""The scheduler adapter's own bookkeeping, on a crawler that never crawls."""

from scrapy.utils.test import get_crawler

from crawlproj import defaults as base
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
