"""The near-duplicate item pipeline: the Scrapy adapter of :mod:`crawlproj.content.near_duplicates`."""

from __future__ import annotations

import logging
from collections.abc import Callable

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object

from .. import signals as crawl_signals
from ..items import PageItem
from ..remote_calls import RemoteCalls
from ..store import beside_store, settings_store
from .budget import PageBudget
from .extract import page_budget
from .main_text import extract_main_text, with_title
from .types import content_family
from .offload import PageWorkers, StageTimeout
from .near_duplicates import Fingerprint
from .sqlite_near_duplicates import SqliteNearDuplicateIndex

logger = logging.getLogger(__name__)


def sign_page(body: bytes, charset: str | None, budget: PageBudget,
              fingerprint_of: Callable[[str], Fingerprint], rendered: bool = False) -> tuple[str | None, Fingerprint]:
    """A page's main text, signed: why the text was limited (or None) and its fingerprint.
    Module-level, so that a helper process can run it."""
    found = extract_main_text(body, charset, budget, rendered)
    return found.limited, fingerprint_of(found.text)


def _signed(limited: str | None, text: str, fingerprint_of: Callable[[str], Fingerprint]) -> tuple[str | None, Fingerprint]:
    """:func:`sign_page`'s answer for a text extracted already."""
    return limited, fingerprint_of(text)


class LocalNearDuplicateIndex(SqliteNearDuplicateIndex):
    """The near-duplicate index on disk: ``NEAR_DUPLICATES_INDEX``, or beside the store
    (``data/crawl.db`` -> ``data/crawl.near_duplicates.db``)."""

    @classmethod
    def from_settings(cls, settings, **shape) -> LocalNearDuplicateIndex:  # noqa: ANN001 - Scrapy Settings
        path = settings.get("NEAR_DUPLICATES_INDEX") or beside_store(
            settings_store(settings), "near_duplicates")
        return cls(path, **shape)


class NearDuplicatePipeline:
    """Marks each HTML page (and each PDF, by its text) that copies a stored page, before it is
    archived and stored.

    The page's main text (layout left out) is checked first by content hash
    (an exact duplicate), then by MinHash LSH (a near-duplicate: estimated
    Jaccard at least ``NEAR_DUPLICATES_THRESHOLD``). A match sets the item's
    ``duplicate_of``, ``duplicate_kind`` and ``jaccard``; the store records it
    in its ``duplicates`` table, and the archive skips its content unless
    ``NEAR_DUPLICATES_KEEP_CONTENT``. The index persists in
    ``NEAR_DUPLICATES_INDEX`` and is committed just before each store commit.

    Main text is extracted within the page budget (``PAGE_MAX_DEPTH``,
    ``MAIN_TEXT_MAX_DEPTH``; a page past a bound counts ``budget/main_text/<why>``).
    A page of ``PAGE_THREAD_MIN_BYTES`` or more (by default every page) is extracted
    and signed in a page thread (:mod:`crawlproj.content.offload`), which shares the
    process's memory; a worker process had been measured to cost more CPU in pickling
    and hand-offs than the work it moved away. Pages of ``PAGE_PROCESS_MIN_BYTES`` or more
    (1 MiB) go to a helper process all the same: resiliparse's main-content step keeps the
    GIL, and on a 5.8 MB page it held every host's next request for 263 ms.
    """

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        if not s.getbool("NEAR_DUPLICATES_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        shape = {"threshold": s.getfloat("NEAR_DUPLICATES_THRESHOLD"), "num_perm": s.getint("NEAR_DUPLICATES_NUM_PERM"),
                 "min_shingles": s.getint("NEAR_DUPLICATES_MIN_SHINGLES"),
                 "max_chars": s.getint("NEAR_DUPLICATES_MAX_CHARS")}
        # The class NEAR_DUPLICATES_INDEX_CLASS names: SQLite beside the store, or Redis (shared
        # by every worker of a distributed crawl).
        self.index = load_object(s.get("NEAR_DUPLICATES_INDEX_CLASS")).from_settings(s, **shape)
        self.path = self.index.where
        crawler.signals.connect(self.index.storage.commit, signal=crawl_signals.store_committing)
        self.budget = page_budget(s)
        self.workers = PageWorkers.of(crawler)
        # A shared index answers over the network: its round trips (a fifth of a worker's main
        # thread in a two-worker crawl, py-spy) wait on a thread of their own.
        self._remote = RemoteCalls("near-duplicates") if getattr(self.index, "remote", False) else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDuplicatePipeline:
        return cls(crawler)

    def open_spider(self, spider: Spider | None = None) -> None:
        logger.info("near-duplicate index %s: %d canonical pages", self.path, len(self.index))

    async def process_item(self, item: object, spider: Spider | None = None) -> object:
        if not isinstance(item, PageItem) or not item.body or not 200 <= item.status < 300:
            return item
        stats = self.crawler.stats
        if item.document is not None:  # a PDF: its text is its main text (a feed has none to compare)
            if item.document.kind != "pdf" or not item.document.text:
                return item
            work, size = (self.index.fingerprint_of, item.document.text), len(item.document.text)
        elif item.content is not None:  # the content stage's main text (and its reason, when limited)
            text = with_title(item.content.title or item.title, item.content.text)
            work, size = (_signed, item.content.limited, text, self.index.fingerprint_of), len(text)
        elif content_family(item.content_type, item.body) == "html":
            work = (sign_page, item.body, item.charset, self.budget, self.index.fingerprint_of, item.rendered)
            size = len(item.body)
        else:
            return item
        if self.workers.wants(size):
            try:
                done = await self.workers.run(*work, size=size)
            except StageTimeout as exc:
                logger.warning("main text of %s gave up: %s", item.url, exc)
                stats.inc_value("budget/timeout/main_text")
                return item
        else:
            done = work[0](*work[1:])
        limited, print_ = (None, done) if item.document is not None else done
        if limited == "reader_text":  # a rendered app's main content fell short of what a reader sees
            stats.inc_value("render/reader_text")
        elif limited:
            stats.inc_value(f"budget/main_text/{limited}")
        if item.content is None:
            item.text_length = print_.length
        item.text_hash = print_.digest
        if self._remote is not None:
            match = await self._remote.run(self.index.add, item.url, print_)
        else:
            match = self.index.add(item.url, print_)
        stats.inc_value("near_duplicates/checked")
        if match is not None:
            item.duplicate_of, item.duplicate_kind, item.jaccard = match.canonical, match.kind, match.jaccard
            stats.inc_value(f"near_duplicates/{match.kind}")
        return item

    def close_spider(self, spider: Spider | None = None) -> None:
        if self._remote is not None:
            self._remote.close()
        self.index.storage.close()
