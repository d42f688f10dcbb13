"""URL-seen test: a Bloom-filter dupefilter over canonical-URL fingerprints (pybloom-live)."""

from __future__ import annotations

import logging
import os
import struct
from typing import Any

from pybloom_live import BloomFilter
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.dupefilters import BaseDupeFilter
from scrapy.utils.request import request_from_dict

logger = logging.getLogger(__name__)


class GrowingBloom:
    """A chain of Bloom filters: when one is full the next, twice as large, starts.

    Filter i gets error rate ``error_rate / 2 ** (i + 1)``, so the chain's
    false-positive rate stays below ``error_rate`` however far it grows (a
    scalable Bloom filter with tightening ratio 1/2). At the configured
    capacity that is ~1.44 log2(2/p) bits per URL: 1.97 bytes at p = 0.1%.
    Size ``URLSEEN_CAPACITY`` to the crawl: every growth step costs bits.

    The last ``KNOWN`` keys found or added are remembered as such (a key once in stays in):
    a site's navigation links repeat on every page, and each answer from the filters hashes
    the key afresh (pybloom-live's hashing, in Python, was 7% of the reactor thread).
    Pure logic apart from :meth:`save`/:meth:`load`.
    """

    KNOWN = 4096

    def __init__(self, capacity: int, error_rate: float) -> None:
        self.capacity = capacity
        self.error_rate = error_rate
        self.filters: list[BloomFilter] = [BloomFilter(capacity, error_rate / 2)]
        self._known: dict[str, None] = {}

    def _remember(self, key: str) -> None:
        if len(self._known) >= self.KNOWN:
            self._known.clear()
        self._known[key] = None

    def add(self, key: str) -> bool:
        """Add ``key``; True if it was (probably) there already."""
        if key in self._known:
            return True
        self._remember(key)
        if any(key in f for f in self.filters[:-1]):
            return True
        last = self.filters[-1]
        if last.count >= last.capacity:
            last = BloomFilter(last.capacity * 2, self.error_rate / 2 ** (len(self.filters) + 1))
            self.filters.append(last)
        return last.add(key)

    def __contains__(self, key: str) -> bool:
        if key in self._known:
            return True
        if any(key in f for f in self.filters):
            self._remember(key)
            return True
        return False

    def __len__(self) -> int:
        return sum(f.count for f in self.filters)

    @property
    def bytes(self) -> int:
        return sum(f.num_bits // 8 for f in self.filters)

    def save(self, path: str) -> None:
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(len(self.filters).to_bytes(4, "big"))
            for f in self.filters:
                f.tofile(fh)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str, capacity: int, error_rate: float) -> GrowingBloom:
        bloom = cls.__new__(cls)
        bloom.capacity, bloom.error_rate, bloom._known = capacity, error_rate, {}
        with open(path, "rb") as fh:
            n = int.from_bytes(fh.read(4), "big")
            bloom.filters = [_read_filter(fh) for _ in range(n)]
        return bloom


def _read_filter(fh: Any) -> BloomFilter:
    """One filter of a saved chain: pybloom-live's ``fromfile`` reads to the end of the file
    unless told the filter's length, so a chain of two or more could not be read back (a resumed
    crawl past ``URLSEEN_CAPACITY`` failed to start)."""
    start, header = fh.tell(), struct.calcsize(BloomFilter.FILE_FMT)
    _, slices, bits_per_slice, _, _ = struct.unpack(BloomFilter.FILE_FMT, fh.read(header))
    fh.seek(start)
    return BloomFilter.fromfile(fh, header + (slices * bits_per_slice + 7) // 8)


def url_key(request: Request) -> str:
    """Canonical GET URLs are their own fingerprint; other requests add method and body."""
    return key_of(request.method, request.url, request.body)


def key_of(method: str, url: str, body: bytes) -> str:
    """:func:`url_key` from the parts (a request dict in the frontier's journal has them)."""
    if method == "GET" and not body:
        return url
    return f"{method} {url} {body.hex()}"


def mark_seen(dupefilter: BaseDupeFilter, entry: dict, spider: Any = None) -> None:
    """Mark a queued entry's URL seen (a journal replay): by its key where the dupefilter
    can (``mark_seen_key``), else through Scrapy's ``request_seen`` on a rebuilt request."""
    mark = getattr(dupefilter, "mark_seen_key", None)
    if mark is not None:
        mark(key_of(entry["method"], entry["url"], entry["body"]))
    else:
        dupefilter.request_seen(request_from_dict(entry, spider=spider))


class BloomDupeFilter(BaseDupeFilter):
    """Drops requests whose URL was seen before, with a Bloom filter.

    ``URLSEEN_CAPACITY`` URLs fit at ``URLSEEN_ERROR_RATE`` false positives;
    beyond, the filter grows. With ``JOBDIR`` the filter is saved on close and
    loaded on start. A false positive drops a URL that was never fetched: that
    is the price of ~2 bytes per URL, and the rate is set at design time.
    To re-admit a known URL on purpose (a revisit), send it with ``dont_filter=True``.
    """

    def __init__(self, capacity: int, error_rate: float, path: str | None, crawler: Crawler | None = None):
        self.path = path
        self.crawler = crawler
        if path and os.path.exists(path):
            self.bloom = GrowingBloom.load(path, capacity, error_rate)
            logger.info("URL-seen filter loaded from %s (%d URLs)", path, len(self.bloom))
        else:
            self.bloom = GrowingBloom(capacity, error_rate)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BloomDupeFilter:
        s = crawler.settings
        jobdir = s.get("JOBDIR")
        path = os.path.join(jobdir, "urlseen.bloom") if jobdir else None
        return cls(s.getint("URLSEEN_CAPACITY"), s.getfloat("URLSEEN_ERROR_RATE"), path, crawler)

    def request_seen(self, request: Request) -> bool:
        return self.bloom.add(url_key(request))

    def seen(self, key: str) -> bool:
        """Whether ``key`` (a GET URL) was (probably) seen, without adding it."""
        return key in self.bloom

    def mark_seen_key(self, key: str) -> None:
        """Mark a URL key seen without a Request (the frontier's journal replay)."""
        self.bloom.add(key)

    def checkpoint(self) -> None:
        """Save the filter now (the frontier compacts its journal after this)."""
        if self.path:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self.bloom.save(self.path)

    def close(self, reason: str = "") -> None:
        self.checkpoint()
