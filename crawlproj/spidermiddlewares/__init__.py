"""Scrapy spider middlewares: trap defences and the ordering annotations on a page's links."""
