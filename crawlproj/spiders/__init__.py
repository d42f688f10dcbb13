"""The spiders: ``web`` (broad crawl from seed lists) and ``site`` (one site)."""
