"""Lean queue entries for the Redis frontier (crawlproj.distributed.entries), without Redis."""

import scrapy

from crawlproj.distributed.entries import lean, pack, unpack
from crawlproj.frontier.entry import request_entry


class Spider(scrapy.Spider):
    name = "s"

    def parse(self, response):
        pass

    def on_error(self, failure):
        pass


def entry_of(url, **kwargs):
    spider = Spider()
    return request_entry(scrapy.Request(url, callback=spider.parse, errback=spider.on_error, **kwargs), spider)


def test_a_link_packs_to_its_path_and_a_few_bytes_of_meta_and_back():
    entry = entry_of("https://docs.example.org/guide/intro.html?x=1", meta={"depth": 3, "cgi_hops": 0,
                                                                            "opic_share": 0.0125})
    packed = pack(entry, "docs.example.org")
    assert packed == b"Ls/guide/intro.html?x=1\x1fd3\x1fc0\x1fo0.0125"
    assert unpack(packed, "docs.example.org") == entry
    # Under another key (FRONTIER_KEY=domain or ip) the whole URL stays.
    assert unpack(pack(entry, "example.org"), "example.org") == entry
    assert pack(entry, "example.org").startswith(b"Lhttps://docs.example.org/")


def test_a_retry_sent_back_stays_lean_and_anything_else_keeps_the_long_form():
    retry = entry_of("http://a.test/p", meta={"depth": 1, "retry_times": 2, "frontier_handed": True},
                     dont_filter=True, priority=-1)
    assert lean(retry, "a.test") is not None and unpack(pack(retry, "a.test"), "a.test") == retry
    for other in (entry_of("http://a.test/p", headers={"Referer": "http://a.test/"}),
                  entry_of("http://a.test/p", meta={"playwright": True}),
                  entry_of("http://a.test/p", method="POST", body=b"q=1"),
                  {**entry_of("http://a.test/p"), "callback": "parse_sitemap"}):
        packed = pack(other, "a.test")
        assert packed[:1] == b"P" and unpack(packed, "a.test") == other


def test_a_lean_entry_is_about_a_fifth_of_the_pickle():
    import pickle

    entry = entry_of("http://h17.example.org/section/page-123.html", meta={"depth": 3, "cgi_hops": 0})
    assert len(pack(entry, "h17.example.org")) * 5 < len(pickle.dumps(entry, protocol=5))
