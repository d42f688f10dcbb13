"""The URL-seen test shared by every worker: a Bloom filter on a Redis bitmap."""

from __future__ import annotations

import hashlib
import logging
import math

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.dupefilters import BaseDupeFilter

from ..frontier.urlseen import url_key
from . import connection, scripts

logger = logging.getLogger(__name__)


def bloom_shape(capacity: int, error_rate: float) -> tuple[int, int]:
    """(bits, hashes) of a Bloom filter for ``capacity`` items at ``error_rate`` false positives."""
    bits = math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)
    return bits, max(1, round(bits / capacity * math.log(2)))


def bit_offsets(key: str, bits: int, hashes: int) -> list[int]:
    """The ``hashes`` bit positions of ``key`` (double hashing from one 128-bit digest)."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=16).digest()
    h1, h2 = int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little") | 1
    return [(h1 + i * h2) % bits for i in range(hashes)]


class RedisBloomDupeFilter(BaseDupeFilter):
    """Drops requests whose URL any worker has seen, with one Bloom filter in Redis.

    The bitmap (``REDIS_PREFIX:seen``) is sized for ``URLSEEN_CAPACITY`` URLs at
    ``URLSEEN_ERROR_RATE`` (1.8 bytes a URL at 0.001; a Redis string holds at most
    2^32 bits, about 300 M URLs at that rate). Test and set are one atomic script
    call, so two workers finding the same link at once queue it once. Debian's
    Redis has no Bloom module; this needs none.
    """

    def __init__(self, client, key: str, capacity: int, error_rate: float) -> None:
        self.r, self.key = client, key
        self.bits, self.hashes = bloom_shape(capacity, error_rate)
        if self.bits > 2 ** 32:
            raise ValueError(f"URLSEEN_CAPACITY={capacity} needs {self.bits} bits; a Redis bitmap holds 2^32")
        self._add = client.register_script(scripts.BLOOM_ADD)
        self._check = client.register_script(scripts.BLOOM_CHECK)
        # URL keys this worker's frontier holds in its push buffer: their bits are set with the
        # push, so until it is sent the bitmap alone would call a second link to them new.
        self.pending: set[str] = set()
        # Keys known seen: bits are never cleared, so a "seen" answer stays true. Bounded
        # (started again when full); it spares a Redis call per repeated link.
        self.known: set[str] = set()
        self.known_max = 500_000

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisBloomDupeFilter:
        s = crawler.settings
        return cls(connection.from_settings(s), f"{s.get('REDIS_PREFIX')}:seen", s.getint("URLSEEN_CAPACITY"),
                   s.getfloat("URLSEEN_ERROR_RATE"))

    def request_seen(self, request: Request) -> bool:
        """Only tests: the frontier sets the bits atomically with the push (see :data:`.scripts.PUSH`)."""
        key = url_key(request)
        if self.seen(key):
            return True
        if self._check(keys=[self.key], args=self.offsets(key)):
            self.remember(key)
            return True
        return False

    def seen(self, key: str) -> bool:
        """Whether this worker knows ``key`` seen, without asking Redis (False: not known)."""
        return key in self.known or key in self.pending

    def remember(self, key: str) -> None:
        """``key`` is in the bitmap (it was found there, or this worker pushed it)."""
        if len(self.known) >= self.known_max:
            self.known.clear()
        self.known.add(key)

    def offsets(self, key: str) -> list[int]:
        return bit_offsets(key, self.bits, self.hashes)

    def seen_key(self, key: str) -> bool:
        """Mark ``key`` seen; whether it was (probably) seen before."""
        return bool(self._add(keys=[self.key], args=self.offsets(key)))
