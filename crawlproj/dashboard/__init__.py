"""The live dashboard: a Scrapy extension serving a page of the crawl, its board and metrics."""
