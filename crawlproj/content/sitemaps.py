"""Sitemaps as sitemaps.org defines them (pure: no Scrapy, no I/O).

* XML ``<urlset>`` and ``<sitemapindex>`` files, with or without the namespace, and text
  sitemaps (one URL a line);
* gzip (``.xml.gz``), unpacked to at most :data:`MAX_BYTES` (50 MB): what is past the limit
  is cut, the rest read;
* at most :data:`MAX_URLS` (50,000) entries a file: the rest are dropped, and counted;
* ``<lastmod>`` in every W3C Datetime form (``2024``, ``2024-05``, ``2024-05-17``,
  ``2024-05-17T10:00Z``, ``2024-05-17T10:00:30.5+09:00``), as Unix seconds (no zone: UTC);
* ``<changefreq>`` and ``<priority>`` kept as the site wrote them: they are recorded, not
  trusted (search engines found them mostly wrong).

The XML is read by lxml's incremental parser without DTDs, entities or network access,
in recovery mode: a broken tail costs only its own entries.
"""

from __future__ import annotations

import calendar
import re
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from io import BytesIO

from lxml import etree

#: sitemaps.org: a sitemap holds at most 50,000 URLs ...
MAX_URLS = 50_000
#: ... and is at most 50 MB (52,428,800 bytes) uncompressed.
MAX_BYTES = 50 * 1024 * 1024
CHANGEFREQS = ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")
_YEAR_MONTH = re.compile(r"(\d{4})(?:-(\d{2}))?")


@dataclass(frozen=True)
class SitemapEntry:
    """One ``<url>`` (or one ``<sitemap>`` of an index)."""

    loc: str
    lastmod: float | None = None  # Unix seconds
    changefreq: str | None = None  # one of CHANGEFREQS, else None
    priority: float | None = None  # 0.0 to 1.0, else None


@dataclass
class Sitemap:
    """A sitemap file read: ``kind`` is ``urlset``, ``sitemapindex`` or ``text``."""

    kind: str
    entries: list[SitemapEntry] = field(default_factory=list)
    dropped: int = 0  # entries past MAX_URLS
    cut: bool = False  # the body passed MAX_BYTES and was read up to it


def unpack(body: bytes, max_bytes: int = MAX_BYTES) -> tuple[bytes, bool]:
    """The body, gunzipped when it is gzip, cut at ``max_bytes``; and whether it was cut.
    A gzip bomb unpacks no further than the limit."""
    if body[:2] == b"\x1f\x8b":
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        try:
            out = inflater.decompress(body, max_bytes + 1)
        except zlib.error:
            out = b""  # not gzip after all, or broken from the start
        return out[:max_bytes], len(out) > max_bytes
    return body[:max_bytes], len(body) > max_bytes


def w3c_datetime(text: str | None) -> float | None:
    """Unix seconds of a W3C Datetime (any of its six forms), or None when it is not one."""
    text = (text or "").strip()
    if not text:
        return None
    m = _YEAR_MONTH.fullmatch(text)
    if m:
        year, month = int(m.group(1)), int(m.group(2) or 1)
        return float(calendar.timegm((year, month, 1, 0, 0, 0))) if 1 <= month <= 12 else None
    try:
        value = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


def _priority(text: str | None) -> float | None:
    try:
        value = float((text or "").strip())
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def parse_sitemap(body: bytes, max_urls: int = MAX_URLS) -> Sitemap:
    """Read an unpacked sitemap body (see :func:`unpack`). Raises ValueError when it is
    neither an XML sitemap nor a text one."""
    head = body.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head != b"<":
        return _text_sitemap(body, max_urls)
    sitemap: Sitemap | None = None
    fields: dict[str, str] = {}
    events = etree.iterparse(BytesIO(body), events=("start", "end"), recover=True, resolve_entities=False,
                             no_network=True, load_dtd=False, huge_tree=False, remove_comments=True)
    try:
        for event, element in events:
            name = _local(element.tag)
            if sitemap is None:
                if name not in ("urlset", "sitemapindex"):
                    raise ValueError(f"not a sitemap: the root element is <{name}>")
                sitemap = Sitemap(name)
                continue
            if event == "start":
                continue
            if name in ("url", "sitemap"):
                loc = fields.get("loc", "").strip()
                if loc:
                    if len(sitemap.entries) < max_urls:
                        changefreq = (fields.get("changefreq") or "").strip().lower()
                        sitemap.entries.append(SitemapEntry(
                            loc, w3c_datetime(fields.get("lastmod")), changefreq if changefreq in CHANGEFREQS else None,
                            _priority(fields.get("priority"))))
                    else:
                        sitemap.dropped += 1
                fields = {}
                element.clear()  # a 50 MB sitemap is read in constant memory
            elif name in ("loc", "lastmod", "changefreq", "priority"):
                fields[name] = element.text or ""
    except etree.XMLSyntaxError as exc:
        if sitemap is None:
            raise ValueError(f"not a sitemap: {exc}") from None
    if sitemap is None:
        raise ValueError("not a sitemap: empty")
    return sitemap


def _text_sitemap(body: bytes, max_urls: int) -> Sitemap:
    """A text sitemap: UTF-8, one absolute http(s) URL a line."""
    text = body.decode("utf-8", errors="replace").removeprefix("\ufeff")
    urls = [line.strip() for line in text.splitlines() if line.strip().startswith(("http://", "https://"))]
    if not urls:
        raise ValueError("not a sitemap: neither XML nor a list of URLs")
    return Sitemap("text", [SitemapEntry(u) for u in urls[:max_urls]], dropped=max(0, len(urls) - max_urls))


def read_sitemap(body: bytes, max_bytes: int = MAX_BYTES, max_urls: int = MAX_URLS) -> Sitemap:
    """A fetched sitemap body (gzip or not) read within both limits (see :func:`parse_sitemap`)."""
    body, cut = unpack(body, max_bytes)
    sitemap = parse_sitemap(body, max_urls)
    sitemap.cut = cut
    return sitemap
