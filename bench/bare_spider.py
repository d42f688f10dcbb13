"""The peer of bench/throughput.py: a bare Scrapy spider that follows every <a href> in its
allowed domains but those marked rel="nofollow" (as crawlproj does: a Sphinx site's links to
its pages' sources are), and stores nothing. Run with `scrapy runspider` outside the project, so that
only Scrapy's defaults apply (plus what the bench passes with -s)."""

import scrapy
from scrapy.http import TextResponse


class BareSpider(scrapy.Spider):
    name = "bare"

    def __init__(self, seeds: str = "", domains: str = "", **kwargs):
        super().__init__(**kwargs)
        self.seed_urls = [line.strip() for line in open(seeds) if line.strip() and not line.startswith("#")]
        self.allowed_domains = [d for d in domains.split(",") if d]

    async def start(self):
        for url in self.seed_urls:
            yield scrapy.Request(url, callback=self.parse)

    def parse(self, response):
        if isinstance(response, TextResponse):
            for href in response.css('a:not([rel~="nofollow"])::attr(href)').getall():
                yield response.follow(href, callback=self.parse)
