"""WARC/1.1 archive writer (warcio): request and response records, revisits, rotation.

Each record is gzipped on its own, so any record can be read back from its
file and offset alone (:func:`read_response`), and standard WARC tools open
the files. A response whose payload digest was archived before is written as a
``revisit`` record (profile identical-payload-digest) that points to the first
capture, at this URL or another, so exact duplicates cost a few hundred bytes.
Files rotate once they pass ``max_bytes``; each file opens with a ``warcinfo`` record
describing the crawl (software, format, operator, robots policy, host), as Heritrix and
Browsertrix write it, so a file read on its own says where it came from. The first captures are kept in a
:class:`~crawlproj.store.digests.DigestIndex` (by default ``<prefix>.digests.db`` in
the directory; the pipeline keeps it beside the store), so revisits point to the
first capture across restarts and crawls.

The Scrapy adapter is :mod:`crawlproj.store.warc_pipeline`; the pages table stores
the (file, offset) this writer returns.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from io import BytesIO
from typing import IO, BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from .digests import DigestIndex, FirstCapture

PROFILE_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"


@dataclass(frozen=True)
class WarcLocation:
    """Where a record is: its WARC file and the offset of its gzip member (a revisit names its original)."""

    file: str
    offset: int
    revisit_of: str | None = None  # WARC-Record-ID of the original capture, for a revisit


def warcinfo_fields(user_agent: str = "", robots: str = "obey", **more: str) -> dict[str, str]:
    """The ``warcinfo`` record's fields (application/warc-fields, in the WARC 1.1 annex's names):
    software and versions, format, the operator (the User-Agent's contact), the robots policy
    and the crawling host."""
    import platform
    import socket
    from importlib.metadata import PackageNotFoundError, version

    from .. import __version__

    def of(package: str) -> str:
        try:
            return f"{package}/{version(package)}"
        except PackageNotFoundError:
            return package

    fields = {"software": f"crawlproj/{__version__} ({of('Scrapy')}; {of('warcio')}; "
                          f"Python/{platform.python_version()})",
              "format": "WARC File Format 1.1",
              "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
              "hostname": socket.gethostname()}
    if user_agent:
        fields["operator"] = operator_of(user_agent)
        fields["http-header-user-agent"] = user_agent
    fields["robots"] = robots
    fields.update({k: v for k, v in more.items() if v})
    return fields


def operator_of(user_agent: str) -> str:
    """Who runs the crawl, as the User-Agent says: its contact URL or e-mail address (the
    ``(+https://...)`` comment), else the whole User-Agent."""
    found = re.search(r"\+?(https?://[^\s;)]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+)", user_agent)
    return found.group(1) if found else user_agent


def payload_digest(body: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


class WarcArchive:
    """Appends captures to ``<directory>/<prefix>-NNNNN.warc.gz``, rotating at ``max_bytes``."""

    def __init__(self, directory: str, prefix: str = "crawlproj", max_bytes: int = 1 << 30,
                 gzip_level: int = 6, digest_index: str | None = None,
                 info: dict[str, str] | None = None) -> None:
        self.directory = directory
        self.info = dict(info) if info else warcinfo_fields()
        self.gzip_level = gzip_level
        self.prefix = prefix
        self.max_bytes = max_bytes
        os.makedirs(directory, exist_ok=True)
        self._index = len([f for f in os.listdir(directory) if f.startswith(prefix) and f.endswith(".warc.gz")])
        self._fh: BinaryIO | None = None
        self._writer: WARCWriter | None = None
        self.path = ""
        self.digests = DigestIndex(digest_index or os.path.join(directory, f"{prefix}.digests.db"))
        self._import_digest_lines(os.path.join(directory, f"{prefix}.digests"))

    def _import_digest_lines(self, path: str) -> None:
        """Archives written before the digest index kept their first captures in a text file
        (digest, record id, URI, date a line): read once into the index, then set aside."""
        if not os.path.exists(path):
            return
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                fields = line.rstrip("\n").split("\t")
                if len(fields) == 4 and line.endswith("\n"):  # a line torn by a kill is skipped
                    self.digests.add(fields[0], FirstCapture(*fields[1:], warc_file=""))
        self.digests.commit()
        os.replace(path, path + ".imported")

    def _open(self) -> None:
        self._close_file()
        self._index += 1
        self.path = os.path.join(self.directory, f"{self.prefix}-{self._index:05d}.warc.gz")
        self._fh = open(self.path, "ab")
        self._writer = WARCWriter(BytesIO(), gzip=False, warc_version="WARC/1.1")  # builds records only
        if self._fh.tell() == 0:  # a file appended to (after a crash) has its warcinfo already
            self._append(self._writer.create_warcinfo_record(os.path.basename(self.path), self.info))
            self._fh.flush()

    def write(self, url: str, status: int, reason: str, headers: list[tuple[str, str]], body: bytes,
              request_headers: list[tuple[str, str]] | None = None, revisit_only: bool = False,
              metadata: list[tuple[str, str]] | None = None) -> WarcLocation | None:
        """Archive one capture: its request, then its response (or a revisit record), then a
        ``metadata`` record of ``metadata`` (``application/warc-fields``, one ``name: value``
        line a pair; the AI-use signals), when there is any.

        With ``revisit_only``, a body not archived before is not written (None)."""
        digest = payload_digest(body)
        original = self.digests.get(digest)
        if original is None and revisit_only:
            return None
        if self._fh is None or self._fh.tell() >= self.max_bytes:
            self._open()
        assert self._writer is not None and self._fh is not None
        w = self._writer
        http = StatusAndHeaders(f"{status} {reason}", headers, protocol="HTTP/1.1")
        offset = self._fh.tell()
        if original is None:
            record = w.create_warc_record(url, "response", payload=BytesIO(body), http_headers=http,
                                          warc_headers_dict={"WARC-Payload-Digest": digest})
        else:
            record = w.create_revisit_record(url, digest, original.uri, original.date, http_headers=http)
            record.rec_headers.replace_header("WARC-Profile", PROFILE_IDENTICAL)
            record.rec_headers.add_header("WARC-Refers-To", original.record_id)
        self._append(record)
        req_http = StatusAndHeaders(f"GET {url} HTTP/1.1", request_headers or [], protocol="HTTP/1.1",
                                    is_http_request=True)
        self._append(w.create_warc_record(url, "request", http_headers=req_http,
                                          warc_headers_dict={"WARC-Concurrent-To": record.rec_headers.get_header(
                                              "WARC-Record-ID")}))
        if metadata:
            fields = "".join(f"{name}: {' '.join(str(value).split())}\r\n" for name, value in metadata)
            self._append(w.create_warc_record(url, "metadata", payload=BytesIO(fields.encode("utf-8")),
                                              warc_content_type="application/warc-fields",
                                              warc_headers_dict={"WARC-Concurrent-To": record.rec_headers.get_header(
                                                  "WARC-Record-ID")}))
        self._fh.flush()
        if original is None:
            headers = record.rec_headers
            self.digests.add(digest, FirstCapture(headers.get_header("WARC-Record-ID"), url,
                                                  headers.get_header("WARC-Date"), os.path.abspath(self.path)))
            return WarcLocation(self.path, offset)
        return WarcLocation(self.path, offset, revisit_of=original.record_id)

    def _append(self, record: object) -> None:
        """One record as its own gzip member. warcio would gzip at level 9; level 6 (gzip's
        default) is about twice as fast on HTML for a few percent more bytes."""
        buffer = BytesIO()
        WARCWriter(buffer, gzip=False, warc_version="WARC/1.1").write_record(record)
        compressor = zlib.compressobj(self.gzip_level, zlib.DEFLATED, zlib.MAX_WBITS + 16)
        self._fh.write(compressor.compress(buffer.getvalue()) + compressor.flush())

    def _close_file(self) -> None:
        if self._fh is not None:
            self._fh.close()
        self._fh = self._writer = None

    def close(self) -> None:
        self._close_file()
        self.digests.close()


def read_capture(location: WarcLocation) -> tuple[str, str, StatusAndHeaders | None, bytes]:
    """(record type, target URI, HTTP headers, payload) of the record at ``location``."""
    with open(location.file, "rb") as fh:
        fh.seek(location.offset)
        record = next(iter(ArchiveIterator(fh)))
        return (record.rec_type, record.rec_headers.get_header("WARC-Target-URI"), record.http_headers,
                record.content_stream().read())


def read_response(location: WarcLocation) -> tuple[str, str, bytes]:
    """(record type, target URI, payload) of the record at ``location``."""
    kind, uri, _, payload = read_capture(location)
    return kind, uri, payload


@dataclass(frozen=True)
class Capture:
    """A page's capture record: its target URI, its date, and the response record holding its
    payload (the record itself, or for a revisit the record it refers to)."""

    uri: str
    date: str
    response_id: str | None


class CaptureReader:
    """Reads a capture's record headers at (file, offset), keeping a few WARC files open."""

    def __init__(self, keep_open: int = 8) -> None:
        self.keep_open = keep_open
        self._files: OrderedDict[str, IO[bytes]] = OrderedDict()

    def _file(self, path: str) -> IO[bytes]:
        if path in self._files:
            self._files.move_to_end(path)
            return self._files[path]
        if len(self._files) >= self.keep_open:
            self._files.popitem(last=False)[1].close()
        fh = self._files[path] = open(path, "rb")
        return fh

    def capture(self, warc_file: str, offset: int) -> Capture | None:
        """None when the file or its record cannot be read."""
        if not os.path.exists(warc_file):
            return None
        fh = self._file(warc_file)
        fh.seek(offset)
        for record in ArchiveIterator(fh):
            headers = record.rec_headers
            if record.rec_type == "response":
                response = headers.get_header("WARC-Record-ID")
            elif record.rec_type == "revisit":
                response = headers.get_header("WARC-Refers-To")
            else:
                return None
            return Capture(headers.get_header("WARC-Target-URI"), headers.get_header("WARC-Date"), response)
        return None

    def close(self) -> None:
        for fh in self._files.values():
            fh.close()
        self._files.clear()
