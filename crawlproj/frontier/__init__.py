"""The Mercator-style two-tier frontier that replaces Scrapy's scheduler."""
