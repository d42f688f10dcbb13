"""What Scrapy's engine knows and does not say publicly: whether it is closing the spider.

Scrapy sets the engine slot's ``closing`` at a close of any reason (``closespider_timeout``,
SIGTERM, the spider idle) and has no public test for it; every component asks here.
"""

from __future__ import annotations

from typing import Any


def engine_closing(crawler: Any) -> bool:
    """Whether the crawl's engine is closing the spider, or has no spider open (not before it opens)."""
    engine = crawler.engine
    slot = getattr(engine, "_slot", None) if engine is not None else None
    return slot is None or slot.closing is not None or not getattr(engine, "running", True)
