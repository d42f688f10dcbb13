"""A page's own charset against its Content-Type header (pure; the downloader middleware is
:mod:`crawlproj.downloadermiddlewares.body_charset`).

Scrapy, like the HTML standard, reads a body in the header's charset before the
body's ``<meta charset>``. Servers get the header wrong far more often than pages
get their meta wrong: a Shift_JIS page served as ``charset=UTF-8`` (a server-wide
default) comes out garbled, though its own bytes say what they are. So when the
body declares a different charset and the header's charset cannot read the body
(or reads any bytes at all, as ISO-8859-1 does), but the declared one can, the
declared one wins. A BOM already wins in Scrapy (w3lib).

A declared charset that is no text encoding at all (``base64``, ``hex``, ``rot13``: Python
codecs from bytes to bytes; ``idna``, which cannot replace errors) made every read of the
page fail. It is set aside for one that reads the body: the BOM's, the other declaration's,
UTF-8 when the body is valid UTF-8, else windows-1252 (the HTML standard's default).
"""

from __future__ import annotations

import codecs
from functools import lru_cache

from w3lib.encoding import html_body_declared_encoding, read_bom, resolve_encoding

_HIGH_BYTES = bytes(range(0x80, 0x100))


@lru_cache(maxsize=64)
def _reads_any_bytes(codec: str) -> bool:
    """Whether ``codec`` decodes (nearly) every byte, as single-byte charsets do: reading a body
    without an error then says nothing (windows-1252 leaves only 5 bytes undefined)."""
    return _HIGH_BYTES.decode(codec, "replace").count("\ufffd") <= 8


def _strict(body: bytes, codec: str) -> bool:
    try:
        body.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return False
    return True


@lru_cache(maxsize=256)
def is_text_encoding(name: str | None) -> bool:
    """Whether ``name`` is a codec that decodes bytes to text, replacing what it cannot read."""
    if not name:
        return False
    try:
        if not codecs.lookup(name)._is_text_encoding:
            return False
        b"<html>\xff".decode(name, "replace")
    except (LookupError, UnicodeError, ValueError, TypeError):
        return False
    return True


def readable_charset(body: bytes, header_charset: str | None) -> str | None:
    """A charset to read the body in when the one it goes by (the header's, else its own
    declaration) is no text encoding; None when that one is fine (pure)."""
    def resolved(name: str | None) -> str | None:
        return (resolve_encoding(name) or name) if name else None

    going_by = resolved(header_charset or html_body_declared_encoding(body))
    if going_by is None or is_text_encoding(going_by):
        return None
    bom = read_bom(body)[0]
    if bom:
        return bom
    own = resolved(html_body_declared_encoding(body))
    if own and is_text_encoding(own) and _strict(body, own):
        return own
    return "utf-8" if _strict(body, "utf-8") else "cp1252"


def body_charset_over_header(body: bytes, header_charset: str | None) -> str | None:
    """The body's declared charset when it should override ``header_charset``, else None (pure)."""
    if not header_charset:
        return None
    declared = html_body_declared_encoding(body)
    header, own = resolve_encoding(header_charset), resolve_encoding(declared) if declared else None
    if not header or not own or not is_text_encoding(header) or not is_text_encoding(own):
        return None
    if codecs.lookup(header).name == codecs.lookup(own).name:
        return None
    if _strict(body, header) and not _reads_any_bytes(header):
        return None  # the header's charset reads the body: the meta is the stale one
    if body.isascii() or not _strict(body, own):
        return None
    return own
