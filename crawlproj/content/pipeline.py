"""The near-duplicate item pipeline: the Scrapy adapter of :mod:`crawlproj.content.near_duplicates`."""

from __future__ import annotations

import asyncio
import functools
import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from .. import signals as crawl_signals
from ..items import PageItem
from ..store import parse_store_uri
from .index_storage import SqliteIndexStorage
from .main_text import main_text
from .near_duplicates import Fingerprint, NearDuplicateIndex, Signer, fingerprint

logger = logging.getLogger(__name__)


def index_path(settings) -> str:
    """``NEAR_DUPLICATES_INDEX``, or beside the store: ``data/crawl.db`` -> ``data/crawl.near_duplicates.db``."""
    path = settings.get("NEAR_DUPLICATES_INDEX")
    if path:
        return path
    return os.path.splitext(parse_store_uri(settings.get("STORE_URI"))[1])[0] + ".near_duplicates.db"


def _exit_with(parent: int) -> None:
    """Worker initializer: leave as soon as the crawler is gone, even after a kill -9 (which no
    pipe reports: each worker holds both ends of its own task queue)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-crawler", daemon=True).start()


@functools.lru_cache(maxsize=4)
def _signer(num_perm: int, seed: int) -> Signer:
    return Signer(num_perm, seed)


def page_fingerprint(body: bytes, charset: str | None, num_perm: int, seed: int, min_shingles: int) -> Fingerprint:
    """Main text, shingles and signature of one page: the CPU-heavy, stateless part (runs in workers)."""
    return fingerprint(main_text(body, charset), _signer(num_perm, seed), min_shingles)


class NearDuplicatePipeline:
    """Marks each HTML page that copies a stored page, before it is archived and stored.

    The page's main text (layout left out) is checked first by content hash
    (an exact duplicate), then by MinHash LSH (a near-duplicate: estimated
    Jaccard at least ``NEAR_DUPLICATES_THRESHOLD``). A match sets the item's
    ``duplicate_of``, ``duplicate_kind`` and ``jaccard``; the store records it
    in its ``duplicates`` table, and the archive skips its content unless
    ``NEAR_DUPLICATES_KEEP_CONTENT``. The index persists in
    ``NEAR_DUPLICATES_INDEX`` and is committed just before each store commit.

    Extraction and signatures (about 1 ms a page, all holding the GIL) run in
    ``NEAR_DUPLICATES_WORKERS`` worker processes, so they use another core
    instead of the crawler's; only the index look-up stays in the crawler.
    """

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        if not s.getbool("NEAR_DUPLICATES_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.path = index_path(s)
        self.index = NearDuplicateIndex(
            threshold=s.getfloat("NEAR_DUPLICATES_THRESHOLD"),
            num_perm=s.getint("NEAR_DUPLICATES_NUM_PERM"),
            storage=SqliteIndexStorage(self.path),
            min_shingles=s.getint("NEAR_DUPLICATES_MIN_SHINGLES"),
        )
        crawler.signals.connect(self.index.storage.commit, signal=crawl_signals.store_committing)
        self.workers = s.getint("NEAR_DUPLICATES_WORKERS")
        self.pool: ProcessPoolExecutor | None = None
        if self.workers:
            # spawn, not fork: the crawler runs threads (DNS, the reactor's pool) that fork would copy mid-flight.
            self.pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_exit_with, initargs=(os.getpid(),))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDuplicatePipeline:
        return cls(crawler)

    def open_spider(self, spider: Spider | None = None) -> None:
        logger.info("near-duplicate index %s: %d canonical pages", self.path, len(self.index))

    async def process_item(self, item: object, spider: Spider | None = None) -> object:
        if not isinstance(item, PageItem) or not item.body or not 200 <= item.status < 300:
            return item
        if "html" not in (item.content_type or "text/html").lower():
            return item
        args = (item.body, item.charset, self.index.num_perm, self.index.signer.seed, self.index.min_shingles)
        if self.pool is None:
            print_ = page_fingerprint(*args)
        else:
            print_ = await asyncio.wrap_future(self.pool.submit(page_fingerprint, *args))
        item.text_length = print_.length
        match = self.index.add(item.url, print_)
        stats = self.crawler.stats
        stats.inc_value("near_duplicates/checked")
        if match is not None:
            item.duplicate_of, item.duplicate_kind, item.jaccard = match.canonical, match.kind, match.jaccard
            stats.inc_value(f"near_duplicates/{match.kind}")
        return item

    def close_spider(self, spider: Spider | None = None) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        self.index.storage.close()
