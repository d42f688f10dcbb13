"""What kind of file a response is: its family, from its Content-Type and its first bytes (pure).

A server's Content-Type is a claim: an image or an archive labelled ``text/html`` would be
parsed as a page of garbage, and a PDF labelled ``application/octet-stream`` would never be
read. So a body whose magic bytes name a binary format is that format, whatever its label;
otherwise the label decides. Families: ``html``, ``pdf``, ``feed``, ``image``, ``audio``,
``video``, ``archive``, ``office``, ``data`` (XML, JSON, CSV), ``text``, ``other``.
"""

from __future__ import annotations

from .feeds import is_feed
from .pdf import is_pdf

FAMILIES = ("html", "pdf", "feed", "image", "audio", "video", "archive", "office", "data", "text", "other")

#: Magic bytes at offset 0 of binary formats, and the family each names.
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image"), (b"\xff\xd8\xff", "image"), (b"GIF87a", "image"), (b"GIF89a", "image"),
    (b"\x00\x00\x01\x00", "image"), (b"II*\x00", "image"), (b"MM\x00*", "image"),
    (b"PK\x03\x04", "archive"), (b"\x1f\x8b", "archive"), (b"BZh", "archive"), (b"7z\xbc\xaf\x27\x1c", "archive"),
    (b"Rar!\x1a\x07", "archive"), (b"\xfd7zXZ\x00", "archive"), (b"\x28\xb5\x2f\xfd", "archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "office"),  # OLE2: .doc, .xls, .ppt
    (b"ID3", "audio"), (b"fLaC", "audio"), (b"OggS", "audio"), (b"\x1aE\xdf\xa3", "video"),  # Matroska, WebM
)
_ARCHIVES = ("zip", "gzip", "x-tar", "x-7z-compressed", "x-rar", "vnd.rar", "x-bzip2", "x-xz", "zstd",
             "java-archive", "x-gzip", "x-compress")
_OFFICE = ("msword", "vnd.ms-", "vnd.openxmlformats-officedocument", "vnd.oasis.opendocument", "rtf")
_DATA = ("xml", "json", "csv", "yaml")


def _sniffed(body: bytes) -> str | None:
    head = body[:16]
    if head[:4] == b"RIFF" and head[8:12] in (b"WEBP", b"WAVE", b"AVI "):
        return {b"WEBP": "image", b"WAVE": "audio", b"AVI ": "video"}[head[8:12]]
    if head[4:8] == b"ftyp":  # MP4, QuickTime, HEIF: by brand
        return "image" if head[8:12] in (b"heic", b"heix", b"avif", b"mif1") else "video"
    for magic, family in _MAGIC:
        if head.startswith(magic):
            return family
    return None


def content_family(content_type: str | bytes | None, body: bytes) -> str:
    """The family of a response (see the module docstring)."""
    if isinstance(content_type, bytes):
        content_type = content_type.decode("latin-1")
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if is_pdf(kind, body):
        return "pdf"
    sniffed = _sniffed(body)
    if sniffed == "archive" and ("openxmlformats" in kind or "opendocument" in kind):
        return "office"  # Office Open XML and OpenDocument files are ZIP archives inside
    if sniffed is not None:
        return sniffed
    if is_feed(kind, body):  # its Content-Type, or an XML body whose root is a feed's
        return "feed"
    top, _, sub = kind.partition("/")
    if not kind or "html" in sub:
        return "html"
    if top in ("image", "audio", "video"):
        return top
    if any(sub == a or sub.startswith(a) for a in _ARCHIVES):
        return "archive"
    if any(sub.startswith(o) for o in _OFFICE):
        return "office"
    if any(d in sub for d in _DATA):
        return "data"
    if top == "text":
        return "text"
    return "other"
