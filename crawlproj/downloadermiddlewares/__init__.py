"""Scrapy downloader middlewares, one a file, named for what each does; their pure rules live
in the domain packages (politeness/, content/, rendering/, traps.py)."""
