"""Pages' text as a WET file: WARC/1.1 ``conversion`` records, as Common Crawl's WET files (warcio).

A ``warcinfo`` record comes first. Then each page with text gets a ``conversion`` record of
its main text (``text/plain; charset=utf-8``), with ``WARC-Target-URI`` and ``WARC-Date`` of
its capture and ``WARC-Refers-To``, the ``WARC-Record-ID`` of the response record its text
was read from: read from the page's WARC file at its offset (for a capture archived as a
revisit record, the response it refers to). A page with no capture in the archive (a duplicate
not archived, or WARC off) has no ``WARC-Refers-To``, and its fetch time for date. Records are
gzipped one by one, as in the crawl's own WARC files.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from io import BytesIO
from typing import IO

from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from ..items import PageItem
from ..store.warc import CaptureReader
from .records import utc


@dataclass
class WetCounts:
    records: int = 0
    referring: int = 0  # with WARC-Refers-To
    without_text: int = 0  # pages with no text, left out


def write_wet(pages: Iterable[PageItem], out: IO[bytes], filename: str, description: str) -> WetCounts:
    """The WET file of ``pages`` to ``out`` (``filename`` is what its warcinfo names)."""
    writer = WARCWriter(out, gzip=True, warc_version="WARC/1.1")
    writer.write_record(writer.create_warcinfo_record(filename, {
        "software": "crawlproj (scrapy export --format wet)",
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        "description": description,
    }))
    counts, reader = WetCounts(), CaptureReader()
    try:
        for page in pages:
            text = page.content.text if page.content is not None else ""
            if not text:
                counts.without_text += 1
                continue
            capture = reader.capture(page.warc_file, page.warc_offset) if page.warc_file else None
            headers = {"WARC-Date": capture.date if capture else datetime_to_iso_date(utc(page.fetched_at),
                                                                                     use_micros=True)}
            if capture is not None and capture.response_id:
                headers["WARC-Refers-To"] = capture.response_id
                counts.referring += 1
            payload = text.encode("utf-8")
            writer.write_record(writer.create_warc_record(
                capture.uri if capture else (page.final_url or page.url), "conversion", payload=BytesIO(payload),
                length=len(payload), warc_content_type="text/plain; charset=utf-8", warc_headers_dict=headers))
            counts.records += 1
    finally:
        reader.close()
    return counts
