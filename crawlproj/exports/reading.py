"""A finished crawl's pages read back from its store, or from several shard stores at once, as
:class:`~crawlproj.items.PageItem` (with their content and links), one at a time.

Pages come in the store's order of writing (its rowids: no sort, no page held beyond the one
being read). Given the shards of a distributed or WORKERS crawl, a URL stored by two of them is
read once, from its latest fetch, as ``scrapy merge`` would keep it: each page is looked up in
the other shards by its primary key.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator

from ..items import PageItem
from ..store.content import META_COLUMNS, from_row

#: pages' columns as PageItem's fields, and what a store from before a column reads instead.
_PAGE = ("url", "final_url", "host", "status", "content_type", "charset", "fetched_at", "fetch_duration", "bytes",
         "content_hash", "title", "text_length", "depth", "warc_file", "warc_offset", "rendered", "language")
_DUPLICATE = ("canonical", "kind", "jaccard")


def open_read_only(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'pages'").fetchone():
        conn.close()
        raise ValueError(f"{path} is not a crawl store (it has no pages table)")
    return conn


def _has(conn: sqlite3.Connection, table: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone() is not None


def _select(conn: sqlite3.Connection) -> str:
    """The query of every page with its duplicate row and content row (NULL where a store from
    before a table or column has none)."""
    present = {row[1] for row in conn.execute("PRAGMA table_info(pages)")}
    columns = [f"p.{c}" if c in present else "NULL" for c in _PAGE]
    joins = ""
    if _has(conn, "duplicates"):
        columns += [f"d.{c}" for c in _DUPLICATE]
        joins += " LEFT JOIN duplicates d ON d.url = p.url"
    else:
        columns += ["NULL"] * len(_DUPLICATE)
    if _has(conn, "page_content"):
        columns += ["c.url", *(f"c.{c}" for c in META_COLUMNS), "c.text", "c.markdown"]
        joins += " LEFT JOIN page_content c ON c.url = p.url"
    else:  # a store from before page content
        columns += ["NULL"] * (len(META_COLUMNS) + 3)
    return f"SELECT {', '.join(columns)} FROM pages p {joins} ORDER BY p.rowid"


def _item(conn: sqlite3.Connection, row: tuple, with_links: bool) -> PageItem:
    page = dict(zip(_PAGE, row[:len(_PAGE)]))
    canonical, kind, jaccard = row[len(_PAGE):len(_PAGE) + 3]
    content_row = row[len(_PAGE) + 3:]
    links = (conn.execute("SELECT target, anchor, nofollow FROM links WHERE source = ?", (page["url"],)).fetchall()
             if with_links and _has(conn, "links") else [])
    return PageItem(**{**page, "rendered": bool(page["rendered"]), "language": page["language"] or ""},
                    links=[(t, a, bool(n)) for t, a, n in links], duplicate_of=canonical, duplicate_kind=kind,
                    jaccard=jaccard, content=from_row(content_row[1:]) if content_row[0] is not None else None)


def count_pages(paths: list[str]) -> int:
    """Pages in the stores (a URL in two shards counted twice: the progress bar's total)."""
    total = 0
    for path in paths:
        with contextlib.closing(open_read_only(path)) as conn:
            total += conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    return total


def stored_pages(paths: list[str], with_links: bool = True,
                 tick: Callable[[int], object] | None = None) -> Iterator[PageItem]:
    """Every page of the stores at ``paths``, once each (see the module docstring).
    ``tick(1)`` after each row read, kept or not (a progress bar's update)."""
    conns = [open_read_only(path) for path in paths]
    try:
        for i, conn in enumerate(conns):
            others = [(j, other) for j, other in enumerate(conns) if j != i]
            for row in conn.execute(_select(conn)):
                if tick is not None:
                    tick(1)
                if others and _newer_elsewhere(row[0], row[_PAGE.index("fetched_at")], i, others):
                    continue
                yield _item(conn, row, with_links)
    finally:
        for conn in conns:
            conn.close()


def _newer_elsewhere(url: str, fetched_at: float | None, index: int, others: list) -> bool:
    """Whether another shard has a later fetch of ``url`` (or the same one, in a shard before)."""
    for j, other in others:
        found = other.execute("SELECT fetched_at FROM pages WHERE url = ?", (url,)).fetchone()
        if found is not None and ((found[0] or 0) > (fetched_at or 0) or (found[0] == fetched_at and j < index)):
            return True
    return False
