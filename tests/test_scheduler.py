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


def test_a_host_is_released_when_its_download_ends_not_when_the_response_leaves_the_middlewares(tmp_path):
    """The Waseda verdict comes as the download ends; a page then waits its turn in a page thread
    (PageParseMiddleware) before the fetch is over for Scrapy. The host's next request may go
    meanwhile (an 8 MB page's parse held every host 1.3 s), and the fetch's end releases nothing
    twice: the host's next request, in flight by then, keeps its key."""
    import time

    from scrapy import Request, Spider, signals
    from scrapy.http import Response

    from crawlproj import signals as crawl_signals

    values = {k: getattr(base, k) for k in dir(base) if k.isupper()}
    crawler = get_crawler(Spider, settings_dict={**values, "PROFILE": "sandbox", "MIN_INTERVAL": 0.0,
                                                 "FRONTIER_SPILL_DIR": str(tmp_path / "spill")})
    crawler.stats.open_spider()
    scheduler = FrontierScheduler.from_crawler(crawler)
    crawler.spider = Spider("t")
    scheduler.open(crawler.spider)
    for page in ("one", "two", "three"):
        scheduler.enqueue_request(Request(f"http://a.test/{page}.html"))
    first = scheduler.next_request()
    assert first is not None and scheduler.next_request() is None  # one at a time
    crawler.signals.send_catch_log(signals.request_reached_downloader, request=first, spider=crawler.spider)
    response = Response(first.url, body=b"<html></html>")
    verdict = scheduler.hosts.fetched("a.test", response, 0.0, time.monotonic(), time.monotonic(), time.time())
    crawler.signals.send_catch_log(crawl_signals.host_rest, request=first, verdict=verdict)
    second = scheduler.next_request()  # the first is still in the middlewares
    assert second is not None and second.url != first.url
    crawler.signals.send_catch_log(crawl_signals.fetch_finished, request=first, result=response)
    assert scheduler.next_request() is None  # the second holds the key
    scheduler.close("finished")


def test_the_time_pages_piling_up_held_every_request_back_is_counted(tmp_path):
    """A crawl slower than its politeness allows says why: the frontier handed nothing out
    while a backlog test (the page stage, the items) said busy."""
    values = {k: getattr(base, k) for k in dir(base) if k.isupper()}
    crawler = get_crawler(settings_dict={**values, "PROFILE": "sandbox", "FRONTIER_SPILL_DIR": str(tmp_path / "spill")})
    crawler.stats.open_spider()
    scheduler = FrontierScheduler.from_crawler(crawler)
    now = [100.0]
    scheduler.clock = lambda: now[0]
    busy = [True]

    class PageStage:
        def busy(self):
            return busy[0]

    scheduler._backlogged = [PageStage().busy]
    assert scheduler.next_request() is None
    now[0] += 0.25
    assert scheduler.next_request() is None  # still held: one hold
    now[0] += 0.5
    busy[0] = False
    assert scheduler.next_request() is None  # nothing queued, but no longer held
    assert crawler.stats.get_value("frontier/backlog_holds") == 1
    assert crawler.stats.get_value("frontier/backlog_holds/PageStage") == 1  # which test held them
    assert crawler.stats.get_value("frontier/backlog_held_seconds") == 0.75
    scheduler.spill.close()


def test_a_request_that_goes_out_past_its_due_time_is_counted_with_how_late():
    """The crawler's own lag, which a polite crawl's rate pays for, is in the stats: a host's
    next request handed out 50 ms after its due time (a busy reactor) counts; one on time does
    not, nor one found after its host had nothing left to fetch."""
    from scrapy import Request, Spider

    values = {k: getattr(base, k) for k in dir(base) if k.isupper()}
    crawler = get_crawler(Spider, settings_dict={**values, "PROFILE": "sandbox", "MIN_INTERVAL": 1.0,
                                                 "FRONTIER_SPILL_DIR": ""})
    crawler.stats.open_spider()
    scheduler = FrontierScheduler.from_crawler(crawler)
    crawler.spider = Spider("t")
    scheduler.open(crawler.spider)
    now = [100.0]
    scheduler.clock = scheduler.frontier.clock = lambda: now[0]
    for page in ("one", "two", "three"):
        scheduler.enqueue_request(Request(f"http://a.test/{page}.html"))
    assert scheduler.next_request() is not None  # due at once, handed out at once
    scheduler.frontier.release("a.test", 101.0)
    now[0] = 101.0
    assert scheduler.next_request() is not None  # on time
    scheduler.frontier.release("a.test", 102.0)
    now[0] = 102.05
    assert scheduler.next_request() is not None  # 50 ms late
    assert crawler.stats.get_value("frontier/dispatched_late") == 1
    assert crawler.stats.get_value("frontier/dispatched_late_seconds") == 0.05
    # Its queue ran dry: a link found 5 s past its due time is handed out at once, and the
    # time the host had nothing to fetch is not the crawler's lag.
    scheduler.frontier.release("a.test", 103.0)
    now[0] = 108.0
    scheduler.enqueue_request(Request("http://a.test/four.html"))
    assert scheduler.next_request().url.endswith("/four.html")
    assert crawler.stats.get_value("frontier/dispatched_late") == 1
    assert crawler.stats.get_value("frontier/dispatched_late_seconds") == 0.05
    scheduler.close("finished")


def test_a_due_host_makes_the_engine_ask_in_the_timers_own_turn(monkeypatch):
    """The engine asked one reactor turn after the frontier's timer fired waited behind every
    callback ready meanwhile (1.3 ms a due host on average in a polite crawl): the timer asks
    it there and then, and an ask already set for the next turn is replaced, not added."""
    import asyncio
    from types import SimpleNamespace

    import scrapy.utils.asyncio
    from scrapy.utils.reactor import CallLaterOnce

    from crawlproj.frontier.wake import EngineWaker

    asks = []
    nextcall = CallLaterOnce(lambda: asks.append("asked"))
    crawler = SimpleNamespace(engine=SimpleNamespace(_slot=SimpleNamespace(nextcall=nextcall, closing=None)))
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    monkeypatch.setattr(scrapy.utils.asyncio, "is_asyncio_available", lambda: True)  # the crawl's reactor
    try:
        nextcall.schedule()  # an ask already set for the loop's next turn
        EngineWaker(crawler, lambda: 0.0)._due()
        assert asks == ["asked"] and nextcall._call is None
        loop.run_until_complete(asyncio.sleep(0.01))
        assert asks == ["asked"]  # the next turn's ask was dropped
        EngineWaker(crawler, lambda: 0.0).now()  # asked outside the timer: in the next turn, as before
        assert asks == ["asked"]
        loop.run_until_complete(asyncio.sleep(0.01))
        assert asks == ["asked", "asked"]
    finally:
        asyncio.set_event_loop(None)
        loop.close()
