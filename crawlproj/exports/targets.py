"""Whether a feed can be written, judged before the crawl starts (pure: paths and permissions).

Scrapy opens a feed's file at its first item, and a file that cannot be opened then fails
once per item with a traceback while the crawl goes on. The ``FEEDS`` check
(:func:`crawlproj.checks.feeds`) asks :func:`feed_problem` first, so such a crawl stops at its
start with one line naming the feed and why.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from urllib.parse import urlparse

from w3lib.url import file_uri_to_path

from .records import FIELDS, unknown_fields


#: Formats whose file is one whole (a footer, a closing bracket): a feed appended to one breaks it.
WHOLE_FILES = {"parquet": "a Parquet file", "json": "a JSON array", "xml": "an XML document"}


def local_path(uri: str) -> str | None:
    """The file a feed URI names on this machine; None for another storage (stdout, s3, ftp...)."""
    scheme = urlparse(uri).scheme
    if scheme == "file":
        return file_uri_to_path(uri)
    if scheme == "" or len(scheme) == 1:  # a plain path (or a Windows drive letter)
        return uri
    return None


def unwritable(path: str) -> str | None:
    """Why a file cannot be written at ``path`` (its directory made as Scrapy makes it), or None."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        return f"{path} is a directory"
    if os.path.exists(path):
        return None if os.access(path, os.W_OK) else f"no permission to write {path}"
    directory = existing = os.path.dirname(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"{existing} is a file, so {directory} cannot be made"
    if not os.access(existing, os.W_OK | os.X_OK):
        made = "" if existing == directory else f" (to make {directory})"
        return f"no permission to write in {existing}{made}"
    return None


def feed_problem(uri: str, options: dict, formats: Iterable[str], default_fields: object, workers: int) -> str | None:
    """Why the feed at ``uri`` with ``options`` (a FEEDS entry) cannot be written, or None.
    ``formats`` are FEED_EXPORTERS', ``default_fields`` FEED_EXPORT_FIELDS (a list, a dict or None)."""
    formats = sorted(formats)
    fmt = options.get("format")
    if not fmt:
        return "no format: name one, e.g. -O pages.out:jsonl, or FEEDS {uri: {'format': 'jsonl'}}"
    if fmt not in formats:
        return f"unknown format {fmt!r}; choose from {', '.join(formats)}"
    fields = options.get("fields", default_fields)
    if fields and unknown_fields(fields):
        return f"unknown field {unknown_fields(fields)[0]!r}; choose from {', '.join(FIELDS)}"
    if workers > 1:
        return ("feeds are written by one crawl process, and WORKERS runs several: export the merged store "
                "when the crawl ends instead (scrapy export --format jsonl --out FILE)")
    path = local_path(uri)
    if path is None:
        return None
    if "%(" in path:  # batch or time parameters: only the directories before them are known
        path = os.path.join(os.path.dirname(path.split("%(", 1)[0]) or ".", "feed")
    problem = unwritable(path)
    if problem:
        return f"cannot be written: {problem}"
    if fmt in WHOLE_FILES and not options.get("overwrite") and os.path.isfile(path) and os.path.getsize(path):
        return (f"-o appends, and {WHOLE_FILES[fmt]} appended to another is no longer one: overwrite it with -O, "
                "name another file, or append JSON lines (.jsonl)")
    return None
