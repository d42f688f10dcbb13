"""crawlproj's Scrapy commands (COMMANDS_MODULE): ``scrapy sandbox``, ``scrapy demo``, ``scrapy report``,
``scrapy wacz``, ``scrapy export``, ``scrapy search``, ``scrapy mirrors``, ``scrapy merge``, ``scrapy seed``,
``scrapy dashboard``.

The commands that read a crawl (``report``, ``wacz``, ``export``, ``search``, ``deadletters``) find it one way
(:func:`store_path`): ``--store``, else the last crawl's store (``LAST_CRAWL_FILE``, which
every crawl writes), else ``STORE_URI``, else the demo's; and each says which it read.
"""

from __future__ import annotations

import glob
import os
import sys

from scrapy.exceptions import UsageError

from ..extensions.console import last_crawl
from ..store import parse_store_uri

#: Where `scrapy demo` (make demo) leaves its crawl.
DEMO_STORE = os.path.join("data", "demo", "crawl.db")


def add_store_option(parser, what: str = "sqlite:///path (default: the last crawl's, else STORE_URI, else the "
                                          "demo's)") -> None:
    parser.add_argument("--store", help=what)


def _path(uri: str) -> str:
    try:
        return parse_store_uri(uri)[1]
    except ValueError as exc:
        raise UsageError(f"--store {uri!r}: {exc}") from None


def store_path(option: str | None, settings) -> str:
    """The database path of the crawl a command reads (see the module docstring), said on stderr.
    A bad URI, or no crawl anywhere, is a usage error naming what was looked for."""
    if option:
        path, why = _path(option), "--store"
    else:
        record = last_crawl(settings.get("LAST_CRAWL_FILE") or "")
        candidates = []
        if record is not None:
            recorded = _path(record["store"])
            if not os.path.isabs(recorded) and record.get("cwd"):
                recorded = os.path.join(record["cwd"], recorded)
            candidates.append((recorded, f"the last crawl's, as {settings.get('LAST_CRAWL_FILE')} records"))
        candidates += [(_path(settings.get("STORE_URI")), "STORE_URI"), (DEMO_STORE, "the demo's")]
        path, why = next(((p, w) for p, w in candidates if os.path.exists(p)), candidates[-2])
    if not os.path.exists(path):
        raise UsageError(f"no crawl store at {path} (give --store sqlite:///path/to/crawl.db)")
    print(f"reading the crawl in {path} ({why})", file=sys.stderr)
    return path


def store_paths(options: list[str] | None, settings) -> list[str]:
    """The stores a command reads several of at once (the shards of a distributed or WORKERS
    crawl): each ``--store`` given, shell patterns allowed in its path; else :func:`store_path`'s one."""
    if not options:
        return [store_path(None, settings)]
    paths = []
    for option in options:
        pattern = _path(option)
        for path in sorted(glob.glob(pattern)) or [pattern]:
            if os.path.abspath(path) not in map(os.path.abspath, paths):
                paths.append(path)
    for path in paths:
        store_path(f"sqlite:///{os.path.abspath(path)}", settings)  # said, and checked, as one --store
    return paths
