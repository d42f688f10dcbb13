"""Scrapy extensions of the crawl process: the console, the stats file, memory and stalls
watches, the garbage collector's tuning (each enabled in EXTENSIONS by crawlproj.defaults)."""
