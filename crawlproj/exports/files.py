"""A finished crawl's pages written to a file (``scrapy export``): the records of the feeds in
JSON lines, JSON, CSV, XML or Parquet (the feeds' own exporters), or their text as WET.

Pages stream from the store (:mod:`crawlproj.exports.reading`) to the file: nothing is held
but a page and, for Parquet, a row group. The file is written aside and renamed into place,
so a file of that name is always whole; ``-`` writes to standard output.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from scrapy.utils.misc import load_object

from ..errors import ExportError
from .reading import stored_pages
from .records import DEFAULT_FIELDS, FEED_ONLY_FIELDS, unknown_fields

#: The formats of ``scrapy export`` and the exporter of each (WET has its own writer).
EXPORTERS = {
    "jsonl": "crawlproj.exports.feeds.JsonLinesExporter",
    "json": "crawlproj.exports.feeds.JsonExporter",
    "csv": "crawlproj.exports.feeds.CsvExporter",
    "xml": "crawlproj.exports.feeds.XmlExporter",
    "parquet": "crawlproj.exports.feeds.ParquetExporter",
}
FORMATS = (*EXPORTERS, "wet")
#: The file a format goes to beside the store: data/crawl.db -> data/crawl.pages.jsonl.
SUFFIXES = {**{fmt: f".pages.{fmt}" for fmt in EXPORTERS}, "wet": ".warc.wet.gz"}


@dataclass(frozen=True)
class Exported:
    out: str
    format: str
    pages: int
    bytes: int | None  # None: written to standard output
    detail: dict


def default_out(store_path: str, fmt: str) -> str:
    return os.path.splitext(store_path)[0] + SUFFIXES[fmt]


def check_fields(fields: tuple[str, ...]) -> None:
    if unknown_fields(fields):
        raise ExportError(f"unknown field {unknown_fields(fields)[0]!r}; choose from "
                          f"{', '.join(f for f in DEFAULT_FIELDS)} and more (docs/exporting.md)")
    feed_only = [f for f in fields if f in FEED_ONLY_FIELDS]
    if feed_only:
        raise ExportError(f"{feed_only[0]} is not in the store (the crawl's WARC files hold bodies and headers): "
                          f"name it in a crawl's feed (-O pages.jsonl -s FEED_EXPORT_FIELDS=...), or package a WACZ")


def export(stores: list[str], fmt: str, out: str, fields: tuple[str, ...] = DEFAULT_FIELDS,
           tick: Callable[[int], object] | None = None) -> Exported:
    """Export the pages of ``stores`` (one store, or the shards of one crawl) to ``out``."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    check_fields(fields)
    if out == "-" and fmt == "parquet":
        raise ExportError("a Parquet file is written with its footer at the end: give --out FILE, not -")
    pages = stored_pages(stores, with_links="links" in fields or fmt == "wet", tick=tick)
    if out == "-":
        detail = _write(pages, fmt, fields, sys.stdout.buffer, out, stores)
        sys.stdout.buffer.flush()
        return Exported(out, fmt, detail.pop("pages"), None, detail)
    directory = os.path.dirname(os.path.abspath(out))
    os.makedirs(directory, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=".export-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            detail = _write(pages, fmt, fields, fh, out, stores)
        os.replace(partial, out)
    except BaseException:
        os.unlink(partial)
        raise
    return Exported(out, fmt, detail.pop("pages"), os.path.getsize(out), detail)


def _write(pages, fmt: str, fields: tuple[str, ...], fh, out: str, stores: list[str]) -> dict:
    if fmt == "wet":
        from .wet import write_wet

        counts = write_wet(pages, fh, os.path.basename(out), f"the main text of each page of {', '.join(stores)}")
        return {"pages": counts.records, "with_refers_to": counts.referring, "without_text": counts.without_text}
    exporter = load_object(EXPORTERS[fmt])(fh, fields_to_export=list(fields), encoding="utf-8")
    exporter.start_exporting()
    n = 0
    for page in pages:
        exporter.export_item(page)
        n += 1
    exporter.finish_exporting()
    return {"pages": n}
