"""crawlproj's Scrapy commands (COMMANDS_MODULE): ``scrapy sandbox``, ``scrapy demo``, ``scrapy mirrors``."""
