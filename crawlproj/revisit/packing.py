"""A URL's revisit state in a few dozen bytes beside its URL, losslessly (pure).

The shared revisit state keeps one value a URL (:mod:`crawlproj.distributed.revisit_queue`);
as JSON it was some 330 bytes. Packed: a bitmap of the columns that differ from their
default (most are 0, empty or None for most pages), one of the columns that take a shorter
form, then the values: integers as varints, a float in 4 bytes when that is exact (intervals
in whole seconds) and 8 otherwise, a 64-hex content hash as its 32 bytes, an HTTP date that
formats back to itself as 4 bytes of seconds, the host left out when it is the URL's.
``unpack(pack(s)) == s`` for every state.
"""

from __future__ import annotations

import math
import struct
from email.utils import formatdate, parsedate_to_datetime

from ..urls import host_of
from .queue import COLUMNS, row_state, state_row
from .state import UrlState

_INTS = {"depth", "changes", "visits", "not_modified", "errors", "probes"}
_FLOATS = {"first_access", "last_access", "unchanged", "tc_min", "interval", "next_due", "rate",
           "sitemap_lastmod", "dated_changes", "dated_exposure", "dated_seen", "planned"}
#: Each column's default: a column at it is left out (an optional column's default is None).
_DEFAULTS = {"depth": 0, "changes": 0, "tc_min": None, "rate": None, "content_hash": None, "etag": None,
             "last_modified": None, "visits": 1, "not_modified": 0, "errors": 0, "sitemap_lastmod": None,
             "dated_changes": 0.0, "dated_exposure": 0.0, "dated_seen": None, "source": "", "probes": 0,
             "kind": "", "planned": None, "unchanged": 0.0, "rule": "", "host": ""}
_PACKED = COLUMNS[1:]  # the URL goes last, whole


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _read_varint(raw: bytes, at: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        byte = raw[at]
        at += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return n, at


def _short_date(value: str) -> int | None:
    """Seconds of an HTTP date that formats back to exactly ``value``, else None."""
    try:
        seconds = int(parsedate_to_datetime(value).timestamp())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return seconds if 0 <= seconds < 2**32 and formatdate(seconds, usegmt=True) == value else None


def _is_hex(value: str) -> bool:
    return len(value) == 64 and value == value.lower() and all(c in "0123456789abcdef" for c in value)


def pack(state: UrlState) -> bytes:
    """``state`` as bytes (see the module docstring)."""
    row = dict(zip(COLUMNS, state_row(state, 0)))
    present = short = 0
    body = bytearray()
    for i, name in enumerate(_PACKED):
        value = row[name]
        if name == "host" and value == host_of(state.url):
            continue  # the URL's own: left out
        if name in _DEFAULTS and value == _DEFAULTS[name] and type(value) is type(_DEFAULTS[name]):
            continue
        present |= 1 << i
        if value is None and name not in _INTS | _FLOATS:  # None where the default is not: a marker
            short |= 1 << i
            body += b"\x00"
        elif name in _INTS and isinstance(value, int) and value >= 0:
            body += _varint(value)
        elif name in _FLOATS and isinstance(value, float | int) and not isinstance(value, bool):
            value = float(value)
            single = struct.pack("<f", value)
            if struct.unpack("<f", single)[0] == value or math.isnan(value):
                short |= 1 << i
                body += single
            else:
                body += struct.pack("<d", value)
        elif name == "content_hash" and _is_hex(value):
            short |= 1 << i
            body += bytes.fromhex(value)
        elif name == "last_modified" and (seconds := _short_date(value)) is not None:
            short |= 1 << i
            body += struct.pack("<I", seconds)
        elif isinstance(value, str):
            data = value.encode("utf-8", "surrogateescape")
            body += _varint(len(data)) + data
        else:
            raise ValueError(f"revisit column {name} cannot be packed: {value!r}")
    return _varint(present) + _varint(short) + bytes(body) + state.url.encode("utf-8", "surrogateescape")


def unpack(raw: bytes) -> UrlState:
    present, at = _read_varint(raw, 0)
    short, at = _read_varint(raw, at)
    row: dict = {}
    for i, name in enumerate(_PACKED):
        bit = 1 << i
        if not present & bit:
            row[name] = _DEFAULTS.get(name)
            continue
        if name in _INTS:
            row[name], at = _read_varint(raw, at)
        elif name in _FLOATS:
            if short & bit:
                row[name], at = struct.unpack_from("<f", raw, at)[0], at + 4
            else:
                row[name], at = struct.unpack_from("<d", raw, at)[0], at + 8
        elif short & bit and name == "content_hash":
            row[name], at = raw[at:at + 32].hex(), at + 32
        elif short & bit and name == "last_modified":
            row[name], at = formatdate(struct.unpack_from("<I", raw, at)[0], usegmt=True), at + 4
        elif short & bit:  # None where the default is not
            row[name], at = None, at + 1
        else:
            length, at = _read_varint(raw, at)
            row[name], at = raw[at:at + length].decode("utf-8", "surrogateescape"), at + length
    url = raw[at:].decode("utf-8", "surrogateescape")
    row["url"] = url
    if not present & 1:  # the host bit (COLUMNS[1]): the URL's own
        row["host"] = host_of(url)
    return row_state(tuple(row[name] for name in COLUMNS))
