"""WACZ 1.1.1 packages of a crawl's WARC files, made by py-wacz (``scrapy wacz``, ``WACZ_ON_CLOSE``).

A WACZ is a zip that replay tools (pywb, ReplayWeb.page) open directly: the WARC files
under ``archive/``, a CDXJ index of every record (``indexes/index.cdx.gz`` with its
``index.idx``, written by cdxj-indexer), the pages list ``pages/pages.jsonl`` and a
``datapackage.json`` with each file's sha256, digested in turn by
``datapackage-digest.json``. py-wacz writes all of it; this module chooses the inputs:

* every ``*.warc.gz`` in the directories the store's pages were archived in, and in those
  the digest index points into, so a revisit record of a later crawl finds the earlier
  crawl's capture it points to in the same package;
* the pages: each stored 2xx page with an archived capture, in the store's order of
  fetching: its URL, its capture's time (the record's WARC-Date), its title and its main
  text (the ``text`` field ReplayWeb.page's full-text search reads), written as a stream and
  copied into the package as it is (py-wacz's ``--copy-pages``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from typing import IO

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from ..errors import WaczError
from . import beside_store, content, settings_store
from .warc_pipeline import digest_index_path
from .digests import DigestIndex
from .warc import CaptureReader

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WaczPackage:
    path: str
    warc_files: int
    pages: int
    bytes: int


def default_wacz_path(store_path: str) -> str:
    """``data/crawl.db`` -> ``data/crawl.wacz``."""
    return beside_store(store_path, "", ".wacz")


def archive_files(store_path: str, digest_index: str | None = None) -> list[str]:
    """The WARC files of the crawl in the store at ``store_path``, whose payload digest index
    is ``digest_index`` (default: beside the store)."""
    if not os.path.exists(store_path):
        raise WaczError(f"no crawl store at {store_path}")
    with contextlib.closing(sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)) as conn:
        files = {f for (f,) in conn.execute("SELECT DISTINCT warc_file FROM pages WHERE warc_file IS NOT NULL")}
    digests = digest_index or beside_store(store_path, "digests")
    if os.path.exists(digests):  # the first captures that revisit records point at, from earlier crawls too
        index = DigestIndex(digests)
        files.update(f for f in index.warc_files() if f)
        index.close()
    directories = {os.path.dirname(os.path.abspath(f)) for f in files}
    warcs = sorted(os.path.join(d, name) for d in directories if os.path.isdir(d)
                   for name in os.listdir(d) if name.endswith((".warc.gz", ".warc")))
    if not warcs:
        raise WaczError(f"the crawl in {store_path} archived nothing (is WARC_ENABLED off?)")
    return warcs


def write_pages(store_path: str, fh: IO[str]) -> int:
    """The WACZ's pages list (json-pages-1.0) of the crawl in the store at ``store_path`` to
    ``fh``, one page at a time; the number of pages."""
    reader = CaptureReader()
    with contextlib.closing(sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)) as conn:
        has_content = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'page_content'").fetchone() is not None
        has_text = has_content and conn.execute("SELECT 1 FROM page_content WHERE text_chars > 0 LIMIT 1").fetchone()
        header = {"format": "json-pages-1.0", "id": "pages", "title": "Pages", **({"hasText": True} if has_text else {})}
        fh.write(json.dumps(header) + "\n")
        rows = conn.execute("""SELECT url, COALESCE(final_url, url), title, warc_file, warc_offset FROM pages
                               WHERE warc_file IS NOT NULL AND status BETWEEN 200 AND 299 ORDER BY fetched_at""")
        seen, n = set(), 0
        for url, page_url, title, warc_file, offset in rows:
            capture = reader.capture(warc_file, offset) if page_url not in seen else None
            if capture is None:  # a URL listed once; a capture that cannot be read is not listed
                continue
            seen.add(page_url)
            page = {"id": hashlib.sha1(f"{capture.date} {page_url}".encode()).hexdigest()[:24], "url": page_url,
                    "ts": capture.date, "title": title or page_url}
            text = conn.execute("SELECT text FROM page_content WHERE url = ?", (url,)).fetchone() if has_content else None
            if text is not None and text[0]:
                page["text"] = content.unpack(text[0])
            fh.write(json.dumps(page, ensure_ascii=False) + "\n")
            n += 1
    reader.close()
    return n


def write_wacz(store_path: str, out: str | None = None, title: str | None = None,
               digest_index: str | None = None) -> WaczPackage:
    """Package the crawl in the store at ``store_path`` as the WACZ file ``out`` (default
    beside the store), written whole and then renamed into place."""
    from wacz.main import main as wacz_main

    warcs = archive_files(store_path, digest_index)
    out = out or default_wacz_path(store_path)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    title = title or f"crawlproj crawl {os.path.basename(os.path.splitext(store_path)[0])}"
    with tempfile.TemporaryDirectory(prefix="wacz-", dir=os.path.dirname(os.path.abspath(out))) as work:
        pages_file = os.path.join(work, "pages.jsonl")
        with open(pages_file, "w", encoding="utf-8") as fh:
            pages = write_pages(store_path, fh)
        partial = os.path.join(work, "crawl.wacz")
        said = io.StringIO()  # py-wacz narrates on stdout; kept for the error message
        with contextlib.redirect_stdout(said):
            code = wacz_main(["create", "-o", partial, "-p", pages_file, "--copy-pages", "--hash-type", "sha256",
                              "--title", title, *warcs])
        if code != 0 or not os.path.exists(partial):
            raise WaczError(f"py-wacz could not package {store_path}: {said.getvalue().strip()[-500:]}")
        os.replace(partial, out)
    return WaczPackage(out, len(warcs), pages, os.path.getsize(out))


class WaczOnClose:
    """Packages the crawl as a WACZ when the spider closes (``WACZ_ON_CLOSE``), after the
    item pipelines have closed the store and the WARC files; in a thread, since indexing
    a large archive takes a while. ``WACZ_FILE`` names it (default: beside the store).
    Stats: ``wacz/pages``, ``wacz/bytes``; a failure is logged and counted
    (``wacz/failed``), and the crawl's own result stands."""

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        if not s.getbool("WACZ_ON_CLOSE") or not s.getbool("WARC_ENABLED"):
            raise NotConfigured
        self.stats = crawler.stats
        self.store_path = settings_store(s)
        self.out = s.get("WACZ_FILE") or None
        self.digest_index = digest_index_path(s)
        from scrapy import signals

        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WaczOnClose:
        return cls(crawler)

    async def spider_closed(self, spider: object = None, reason: str = "") -> None:
        # A coroutine, not a Deferred: Scrapy 2.19 warns about handlers that return one.
        try:
            package = await maybe_deferred_to_future(
                deferToThread(write_wacz, self.store_path, self.out, None, self.digest_index))
        except Exception as exc:  # noqa: BLE001 - the crawl is over: say why, and count it
            self.stats.inc_value("wacz/failed")
            logger.error("no WACZ written: %s", exc)
            return
        self.stats.set_value("wacz/pages", package.pages)
        self.stats.set_value("wacz/bytes", package.bytes)
        logger.info("WACZ %s: %d pages, %d WARC files, %d bytes", package.path, package.pages,
                    package.warc_files, package.bytes)
