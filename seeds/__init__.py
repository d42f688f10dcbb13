"""Seed lists for `scrapy crawl web`: one URL a line. A package, so that the egg Scrapyd runs carries them."""
