"""The URL-seen test shared by every worker: growing Bloom filters on Redis bitmaps, one chain
per frontier partition."""

from __future__ import annotations

import hashlib
import logging
import math
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.dupefilters import BaseDupeFilter

from ..frontier.urlseen import url_key
from ..politeness.keys import host_key
from . import connection, scripts
from .keyspace import partition_of, partition_tag

logger = logging.getLogger(__name__)


def bloom_shape(capacity: int, error_rate: float) -> tuple[int, int]:
    """(bits, hashes) of a Bloom filter for ``capacity`` items at ``error_rate`` false positives
    (the scripts' ``bloom_shape``)."""
    bits = math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)
    return bits, max(1, round(bits / capacity * math.log(2)))


def url_hashes(key: str) -> tuple[int, int]:
    """The two 32-bit hashes the scripts derive a URL's bits from (double hashing)."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=8).digest()
    return int.from_bytes(digest[:4], "little"), int.from_bytes(digest[4:], "little") | 1


def _mark(key: str) -> int:
    """A key as the worker's own sets hold it: its hash (this process's; never shared)."""
    return hash(key)


class RedisBloomDupeFilter(BaseDupeFilter):
    """Drops requests whose URL any worker has seen, with Bloom filters in Redis.

    A URL's bits live in its host's frontier partition (``{REDIS_PREFIX:<part>}:seen:<i>``),
    so the frontier marks a URL seen in the same script call that queues it, and on a
    cluster each partition's filters sit on the node that holds its queues. Each partition
    keeps a chain of filters, as the local :class:`~crawlproj.frontier.urlseen.GrowingBloom`
    does: the first sized for ``URLSEEN_CAPACITY / FRONTIER_PARTITIONS`` URLs, each next one
    twice as large, with error rates that keep the chain below ``URLSEEN_ERROR_RATE``
    (about 2 bytes a URL at 0.001). So no bitmap grows without bound, however large the
    crawl or however uneven its hosts. Debian's Redis has no Bloom module; this needs none.
    """

    def __init__(self, client, prefix: str, capacity: int, error_rate: float, partitions: int = 64,
                 frontier_key: str = "host") -> None:
        self.r, self.prefix, self.partitions, self.frontier_key = client, prefix, partitions, frontier_key
        self.first_capacity = max(1000, capacity // partitions)
        self.error_rate = error_rate
        self._seen = client.register_script(scripts.SEEN)
        # URL keys this worker's frontier holds in its push buffer: their bits are set with the
        # push, so until it is sent the bitmap alone would call a second link to them new.
        self.pending: set[str] = set()
        # Keys known seen: bits are never cleared, so a "seen" answer stays true. Bounded
        # (started again when full); it spares a Redis call per repeated link. Held as the
        # keys' 64-bit hashes (_mark): 77 bytes a key against 146 as a broad crawl's URL
        # strings, at the bound of both sets 77 MB a worker instead of 146; a collision among
        # 500,000 (odds 1 in 10^8) would take one new URL for seen.
        self.known: set[int] = set()
        self.known_max = 500_000
        # Keys seen_many found not seen, their request not yet tested: request_seen takes them
        # as new without asking (the push's script sets the bits, and drops a URL another
        # worker pushed meanwhile). Bounded like ``known``.
        self.fresh: set[int] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisBloomDupeFilter:
        s = crawler.settings
        return cls(connection.from_settings(s), s.get("REDIS_PREFIX"), s.getint("URLSEEN_CAPACITY"),
                   s.getfloat("URLSEEN_ERROR_RATE"), s.getint("FRONTIER_PARTITIONS"), s.get("FRONTIER_KEY"))

    def locate(self, key: str, url: str) -> tuple[str, int, int]:
        """(the tag of the partition holding ``url``'s bits, its two hashes). The partition is
        its politeness key's, so the push's script reaches them (by IP: by host name, one
        Redis only)."""
        host = urlsplit(url).hostname or ""
        owner = host if self.frontier_key == "ip" else host_key(host, self.frontier_key)
        return (partition_tag(self.prefix, partition_of(owner, self.partitions)), *url_hashes(key))

    def request_seen(self, request: Request) -> bool:
        """Only tests: the frontier sets the bits atomically with the push (see :data:`.scripts.PUSH`)."""
        key = url_key(request)
        if self.seen(key):
            return True
        mark = _mark(key)
        if mark in self.fresh:
            self.fresh.discard(mark)
            return False
        tag, h1, h2 = self.locate(key, request.url)
        if connection.run_scripts(self.r, [(self._seen, [f"{tag}:ready"],
                                            [tag, self.first_capacity, self.error_rate, h1, h2])])[0]:
            self.remember(key)
            return True
        return False

    def seen_many(self, urls: list[str]) -> set[str]:
        """Of these URLs (GET, canonical: their own keys), those the filter holds, asked in one
        round trip; the others are noted fresh, so that their requests are not asked again."""
        unknown = [url for url in urls if not self.seen(url)]
        if not unknown:
            return set(urls)
        answers = connection.run_scripts(self.r, [
            (self._seen, [f"{tag}:ready"], [tag, self.first_capacity, self.error_rate, h1, h2])
            for tag, h1, h2 in (self.locate(url, url) for url in unknown)])
        if len(self.fresh) >= self.known_max:
            self.fresh.clear()
        for url, found in zip(unknown, answers):
            if found:
                self.remember(url)
            else:
                self.fresh.add(_mark(url))
        return {url for url in urls if self.seen(url)}

    def seen(self, key: str) -> bool:
        """Whether this worker knows ``key`` seen, without asking Redis (False: not known)."""
        return _mark(key) in self.known or key in self.pending

    def remember(self, key: str) -> None:
        """``key`` is in the bitmap (it was found there, or this worker pushed it)."""
        if len(self.known) >= self.known_max:
            self.known.clear()
        self.known.add(_mark(key))
