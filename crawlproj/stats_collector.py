"""The crawl's stats collector: Scrapy's in-memory one, with plain attribute lookups."""

from __future__ import annotations

from scrapy.statscollectors import MemoryStatsCollector


class CrawlStatsCollector(MemoryStatsCollector):
    """Scrapy's :class:`~scrapy.statscollectors.MemoryStatsCollector` (``STATS_CLASS``).

    Scrapy 2.19's collector routes every attribute lookup through a hook that warns of a
    ``spider`` argument, raising and catching an AttributeError for each of its own
    (``self._stats`` in every ``inc_value``): in a polite crawl that hook alone was 5% of
    the reactor thread's time, and each millisecond there delays a host's due request.
    The methods still take ``spider``; nothing here passes it.
    """

    __getattribute__ = object.__getattribute__
