"""Text kept zstd-compressed in the store (pure): page text and Markdown, UTF-8."""

from __future__ import annotations

import threading

import zstandard

#: zstd level 3 (zstd's default): measured on real documentation pages in bench/content_store.py.
LEVEL = 3
_local = threading.local()  # zstd contexts are not to be shared between threads


def pack(text: str) -> bytes:
    if not hasattr(_local, "compressor"):
        _local.compressor = zstandard.ZstdCompressor(level=LEVEL)
    return _local.compressor.compress(text.encode("utf-8"))


def unpack(blob: bytes | None) -> str:
    if not blob:
        return ""
    if not hasattr(_local, "decompressor"):
        _local.decompressor = zstandard.ZstdDecompressor()
    return _local.decompressor.decompress(blob).decode("utf-8")
