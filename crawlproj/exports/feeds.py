"""Scrapy's feed exports of a crawl's pages: ``-O pages.jsonl`` (or .json, .csv, .xml, .parquet).

* :class:`PageFeeds`, an add-on, gives every feed in ``FEEDS`` the item filter
  :class:`PageFilter`: a feed gets one record per stored page, and the crawl's internal items
  (fetch errors, URLs skipped on purpose, sitemaps' entries) and 304 revisits (nothing new
  was read) never reach it, so Scrapy's ``Stored jsonl feed (N items)`` counts pages.
* The exporters of ``FEED_EXPORTERS`` are Scrapy's, each turning a page into its record
  (:func:`crawlproj.exports.records.record`, the fields of ``FEED_EXPORT_FIELDS``) and
  writing its values its own way: ISO 8601 times, JSON text in a CSV cell, XML 1.0's
  characters only; :class:`ParquetExporter` writes Parquet (:mod:`crawlproj.exports.parquet`).
* ``scrapy export`` uses the same exporters on pages read back from the store.

A feed that cannot be written is refused before the crawl starts (the ``FEEDS`` check,
:func:`crawlproj.exports.targets.feed_problem`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import IO, Any

from scrapy.exporters import (BaseItemExporter, CsvItemExporter, JsonItemExporter, JsonLinesItemExporter,
                              MarshalItemExporter, PickleItemExporter, XmlItemExporter)
from scrapy.extensions.feedexport import ItemFilter

from ..items import FetchError, PageItem, SitemapUrls, Skipped
from ..store.content import ContentPolicy, kept
from .records import DEFAULT_FIELDS, iso, record

PAGE_FILTER = "crawlproj.exports.feeds.PageFilter"
#: The crawl's own records that are not pages: never in a feed.
INTERNAL = (FetchError, Skipped, SitemapUrls)


class PageFeeds:
    """The add-on: every feed not given an ``item_filter`` of its own gets :class:`PageFilter`."""

    def update_settings(self, settings: Any) -> None:
        feeds = settings.getdict("FEEDS")
        if feeds:
            settings.set("FEEDS", {uri: {"item_filter": PAGE_FILTER, **(options or {})} for uri, options in feeds.items()},
                         priority=settings.getpriority("FEEDS"))


class PageFilter(ItemFilter):
    """Stored pages only: not FetchError, Skipped or SitemapUrls items, nor a 304 revisit. Items
    of another kind (a spider of the project's own yields its own) are the project's: kept."""

    def accepts(self, item: Any) -> bool:
        if isinstance(item, PageItem):
            return not item.not_modified and super().accepts(item)
        return not isinstance(item, INTERNAL) and super().accepts(item)


def record_fields(fields_to_export: Any) -> tuple[str, ...]:
    """The record fields an exporter's ``fields_to_export`` names (a list, {field: column}, or None)."""
    if fields_to_export is None:
        return DEFAULT_FIELDS
    return tuple(fields_to_export.keys() if isinstance(fields_to_export, Mapping) else fields_to_export)


class PageRecords:
    """Mixed into a Scrapy exporter: a page is exported as its record. ``policy`` is what the
    crawl keeps of content (CONTENT_MARKDOWN, CONTENT_MAX_CHARS), None for pages read back from
    the store (kept already)."""

    policy: ContentPolicy | None = None

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        exporter = cls(*args, **kwargs)
        exporter.policy = ContentPolicy.from_settings(crawler.settings)
        return exporter

    def export_item(self, item: Any) -> Any:
        if isinstance(item, PageItem):
            if self.policy is not None and item.content is not None:
                item = replace(item, content=kept(item.content, self.policy))
            item = record(item, record_fields(self.fields_to_export))
        return super().export_item(item)

    def serialize_field(self, field: Any, name: str, value: Any) -> Any:
        return _times(value)


def _times(value: Any) -> Any:
    return iso(value) if isinstance(value, datetime) else value


class JsonExporter(PageRecords, JsonItemExporter):
    pass


class JsonLinesExporter(PageRecords, JsonLinesItemExporter):
    pass


class MarshalExporter(PageRecords, MarshalItemExporter):
    pass


class PickleExporter(PageRecords, PickleItemExporter):
    pass


class CsvExporter(PageRecords, CsvItemExporter):
    """Lists and objects (links, headers) as JSON text in their cell; true and false; None empty."""

    def serialize_field(self, field: Any, name: str, value: Any) -> Any:
        if isinstance(value, (list, dict)):
            return json.dumps(value, ensure_ascii=False)
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else _times(value)


#: What XML 1.0 cannot hold (a PDF's text has form feeds between pages): U+FFFD there.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _xml(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _xml(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_xml(v) for v in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, str):
        return _NOT_XML.sub("\ufffd", value)
    return _times(value)


class XmlExporter(PageRecords, XmlItemExporter):
    """Links as ``<links><value><url>…</url><anchor>…</anchor><nofollow>false</nofollow></value>…``."""

    def serialize_field(self, field: Any, name: str, value: Any) -> Any:
        return _xml(value)


class ParquetItemExporter(BaseItemExporter):
    """Items to Parquet, a row group of at most 2,000 items at a time, zstd: the columns are
    ``fields_to_export`` (a list, or {field: column}), typed as :mod:`crawlproj.exports.parquet`
    says."""

    def __init__(self, file: IO[bytes], **kwargs: Any) -> None:
        super().__init__(dont_fail=True, **kwargs)
        self.file = file
        self._writer = None

    def start_exporting(self) -> None:
        from .parquet import ParquetRecords

        fields = self.fields_to_export
        columns = dict(fields) if isinstance(fields, Mapping) else {f: f for f in record_fields(fields)}
        self._writer = ParquetRecords(self.file, columns)

    def export_item(self, item: Any) -> None:
        self._writer.write(dict(self.get_serialized_fields(item, include_empty=True)))

    def serialize_field(self, field: Any, name: str, value: Any) -> Any:
        return value  # Parquet has types of its own: a timestamp, lists of structs

    def finish_exporting(self) -> None:
        self._writer.close()


class ParquetExporter(PageRecords, ParquetItemExporter):
    """``-O pages.parquet``."""

    def serialize_field(self, field: Any, name: str, value: Any) -> Any:
        return value
