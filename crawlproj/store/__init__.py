"""Storage of crawl results behind one small interface, chosen by ``STORE_URI``."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from .content import ContentPolicy
from .sqlite import SqliteStore

SCHEMES = ("sqlite",)


def parse_store_uri(uri: str) -> tuple[str, str]:
    """(scheme, location) of a store URI; ``sqlite:///rel/path`` or ``sqlite:////abs/path``."""
    if not isinstance(uri, str) or "://" not in uri:
        raise ValueError("expected a URI such as sqlite:///data/crawl.db")
    parts = urlsplit(uri)
    if parts.scheme not in SCHEMES:
        raise ValueError(f"unknown store scheme {parts.scheme!r}; supported: {', '.join(SCHEMES)}")
    if parts.netloc:
        raise ValueError("sqlite URIs have no host: use sqlite:///relative/path or sqlite:////absolute/path")
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    if not path or path.endswith("/"):
        raise ValueError("the URI names no database file")
    return parts.scheme, path


def beside_store(path: str, name: str, ext: str = ".db") -> str:
    """A file (or folder) kept beside the store's file, the one place its name is made:
    ``data/crawl.db``, ``revisit`` -> ``data/crawl.revisit.db``; ``stats``, ``.json`` ->
    ``data/crawl.stats.json``; ``""``, ``.wacz`` -> ``data/crawl.wacz``."""
    return os.path.splitext(path)[0] + (f".{name}" if name else "") + ext


def settings_store(settings) -> str:  # noqa: ANN001 - Scrapy settings
    """The path of the store ``STORE_URI`` names."""
    return parse_store_uri(settings.get("STORE_URI"))[1]


def open_store(uri: str, content: ContentPolicy = ContentPolicy()) -> SqliteStore:
    _, path = parse_store_uri(uri)
    return SqliteStore(path, content)
