"""crawlproj: a polite, scalable, incremental web crawler built on Scrapy."""

__version__ = "0.1.0"
