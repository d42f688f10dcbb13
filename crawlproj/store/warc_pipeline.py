"""The WARC item pipeline: the Scrapy adapter of :mod:`crawlproj.store.warc`."""

from __future__ import annotations

import logging
import os
from http import HTTPStatus

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from ..items import PageItem, RequisiteItem
from . import beside_store, settings_store
from .warc import WarcLocation, WarcArchive, warcinfo_fields
from .writer import WriterThread

logger = logging.getLogger(__name__)

# Scrapy hands over the decoded body, so these no longer describe what the record holds.
_TRANSFER_HEADERS = {"content-encoding", "transfer-encoding", "content-length"}


def warc_directory(settings) -> str:
    """``WARC_DIR``, or ``warc/`` beside the store database."""
    return settings.get("WARC_DIR") or os.path.join(
        os.path.dirname(settings_store(settings)) or ".", "warc")


def digest_index_path(settings) -> str:
    """``WARC_DIGEST_INDEX``, or beside the store (``data/crawl.db`` -> ``data/crawl.digests.db``)."""
    return settings.get("WARC_DIGEST_INDEX") or beside_store(settings_store(settings), "digests")


class ArchivePipeline:
    """Writes each fetched page to WARC/1.1 files and puts (file, offset) on the item.

    Request and response records (and a metadata record of the page's AI-use signals, when
    it has any), gzipped per record, rotated at ``WARC_MAX_BYTES``. A body archived before
    becomes a revisit record (identical-payload-digest) pointing at the first capture,
    whatever its URL and whichever crawl into this store made it (the digest index,
    ``WARC_DIGEST_INDEX``). A page the content pipeline marked as a
    duplicate of another is not archived unless ``NEAR_DUPLICATES_KEEP_CONTENT``
    (its body identical to an archived one still gets its small revisit record).
    Records are built, gzipped and written in a writer thread, in the order items come.
    """

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        if not s.getbool("WARC_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.keep_duplicates = s.getbool("NEAR_DUPLICATES_KEEP_CONTENT")
        self.outlinks = s.getbool("WARC_OUTLINKS")
        info = warcinfo_fields(s.get("USER_AGENT"), "obey" if s.getbool("ROBOTSTXT_OBEY") else "ignore",
                               isPartOf=s.get("WARC_PREFIX"))
        self.archive = WarcArchive(warc_directory(s), prefix=s.get("WARC_PREFIX"), max_bytes=s.getint("WARC_MAX_BYTES"),
                                   digest_index=digest_index_path(s), info=info)
        # Off the reactor: gzipping a large page held it 100-300 ms (see crawlproj.store.writer).
        self.writer = WriterThread("warc")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ArchivePipeline:
        return cls(crawler)

    async def process_item(self, item: object, spider: Spider | None = None) -> object:
        if isinstance(item, RequisiteItem):
            return await self._requisite(item)
        if not isinstance(item, PageItem):
            return item
        if item.not_modified:  # nothing new to archive: the capture in hand is still current
            self.crawler.stats.inc_value("warc/not_modified")
            return item
        # "robots.txt:ai-train" -> "ai-use: robots.txt ai-train=no"
        metadata = [("ai-use", f"{key.replace(':', ' ', 1)}={value}") for key, value in sorted(item.ai_signals.items())]
        if self.outlinks:  # as Heritrix writes them: "outlink: URL L a/@href" (L: a link hop)
            metadata += [("outlink", f"{target} L a/@href") for target in dict.fromkeys(t for t, _, _ in item.links)]
        location = await self._write(item.final_url, item.status, item.response_headers, item.body,
                                     item.request_headers, bool(item.duplicate_of) and not self.keep_duplicates,
                                     metadata)
        stats = self.crawler.stats
        if location is None:
            stats.inc_value("warc/duplicates_skipped")
            return item
        item.warc_file, item.warc_offset = os.path.abspath(location.file), location.offset
        stats.inc_value("warc/revisits" if location.revisit_of else "warc/responses")
        return item

    async def _requisite(self, item: RequisiteItem) -> RequisiteItem:
        """A page requisite: a response record, or a revisit when its payload was archived before
        (a site's one stylesheet, named by every page, is fetched once and its copies elsewhere
        cost a revisit record)."""
        location = await self._write(item.url, item.status, item.response_headers, item.body, item.request_headers)
        item.warc_file, item.warc_offset = os.path.abspath(location.file), location.offset
        self.crawler.stats.inc_value("warc/requisite_revisits" if location.revisit_of else "warc/requisite_responses")
        return item

    async def _write(self, url: str, status: int, response_headers: list[tuple[str, str]], body: bytes,
                     request_headers: list[tuple[str, str]], revisit_only: bool = False,
                     metadata: list[tuple[str, str]] | None = None) -> WarcLocation | None:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Unknown"
        headers = [(k, v) for k, v in response_headers if k.lower() not in _TRANSFER_HEADERS]
        headers.append(("Content-Length", str(len(body))))
        return await self.writer.run(self.archive.write, url, status, reason, headers, body, request_headers,
                                     revisit_only, metadata)

    def close_spider(self, spider: Spider | None = None) -> None:
        self.writer.close()
        self.archive.close()
