"""The store's change records and watches: the ``changes`` and ``watches`` tables (pure: SQLite).

A change is written with the capture that found it, in the store's transaction
(:class:`ChangeRecord`, carried by the page's item). A watch is a page someone asked to be
told about (``scrapy watch add``): its selector, ignore patterns and revisit interval, and the
watched content at its last capture (what its next capture is compared with).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass, field

from .zstd_text import pack, unpack

SCHEMA = """
CREATE TABLE IF NOT EXISTS changes (          -- each revisit that found new content (crawlproj.changes)
    id TEXT PRIMARY KEY,                      -- sha1 of url and time: stable across notifications
    url TEXT NOT NULL,
    at REAL NOT NULL,                         -- unix time of the capture that found it
    previous_at REAL,                         -- ... and of the capture before
    warc_file TEXT, warc_offset INTEGER,      -- the capture (NULL: not archived)
    previous_warc_file TEXT, previous_warc_offset INTEGER,
    meaningful INTEGER NOT NULL,              -- 1: content changed; 0: noise only
    reason TEXT NOT NULL,                     -- text | title | links (meaningful); noise | reordered | identical
    similarity REAL NOT NULL,                 -- of the main texts, 0..1
    lines_added INTEGER NOT NULL,
    lines_removed INTEGER NOT NULL,
    title_before TEXT,
    title_after TEXT,
    links_added TEXT NOT NULL,                -- JSON list
    links_removed TEXT NOT NULL,              -- JSON list
    watched INTEGER NOT NULL DEFAULT 0,       -- 1: compared on a watch's selection
    diff BLOB NOT NULL                        -- unified diff of the main text, zstd-compressed UTF-8
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS changes_at ON changes(at);
CREATE INDEX IF NOT EXISTS changes_url ON changes(url, at);
CREATE TABLE IF NOT EXISTS watches (          -- pages to be told about (scrapy watch)
    url TEXT PRIMARY KEY,
    css TEXT,                                 -- what of the page counts (one of css, xpath; neither: main text)
    xpath TEXT,
    ignore TEXT NOT NULL DEFAULT '[]',        -- JSON list of regexes cut from its text
    every REAL,                               -- revisit at least this often (seconds); NULL: its schedule's
    added_at REAL NOT NULL,
    title TEXT,                               -- the watched content at its last capture
    text BLOB,                                -- zstd-compressed UTF-8
    links TEXT                                -- JSON list
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class ChangeRecord:
    """One row of ``changes`` (see :data:`SCHEMA`)."""

    id: str
    url: str
    at: float
    previous_at: float | None
    warc_file: str | None
    warc_offset: int | None
    previous_warc_file: str | None
    previous_warc_offset: int | None
    meaningful: bool
    reason: str
    similarity: float
    lines_added: int
    lines_removed: int
    title_before: str | None
    title_after: str | None
    links_added: tuple[str, ...]
    links_removed: tuple[str, ...]
    watched: bool
    diff: str

    def as_json(self) -> dict:
        return {**asdict(self), "links_added": list(self.links_added), "links_removed": list(self.links_removed)}


COLUMNS = tuple(ChangeRecord.__dataclass_fields__)


@dataclass(frozen=True)
class Watch:
    """One row of ``watches``: what to watch of a page and how often."""

    url: str
    css: str | None = None
    xpath: str | None = None
    ignore: tuple[str, ...] = ()
    every: float | None = None
    added_at: float = 0.0


@dataclass
class WatchSnapshot:
    """A watched page's content at its last capture (written with the capture)."""

    url: str
    title: str | None
    text: str
    links: list[str] = field(default_factory=list)


def put_change(cur: sqlite3.Cursor, c: ChangeRecord) -> None:
    values = asdict(c)
    values.update(meaningful=int(c.meaningful), watched=int(c.watched), links_added=json.dumps(list(c.links_added)),
                  links_removed=json.dumps(list(c.links_removed)), diff=pack(c.diff))
    cur.execute(f"INSERT OR REPLACE INTO changes ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                [values[k] for k in COLUMNS])


def put_snapshot(cur: sqlite3.Cursor, s: WatchSnapshot) -> None:
    cur.execute("UPDATE watches SET title = ?, text = ?, links = ? WHERE url = ?",
                (s.title, pack(s.text), json.dumps(s.links), s.url))


def _record(row: tuple) -> ChangeRecord:
    v = dict(zip(COLUMNS, row))
    v.update(meaningful=bool(v["meaningful"]), watched=bool(v["watched"]), diff=unpack(v["diff"]),
             links_added=tuple(json.loads(v["links_added"])), links_removed=tuple(json.loads(v["links_removed"])))
    return ChangeRecord(**v)


def read_changes(conn: sqlite3.Connection, since: float | None = None, url: str | None = None,
                 meaningful: bool = False, limit: int | None = None, newest_first: bool = False) -> list[ChangeRecord]:
    """Change records, oldest first (``newest_first``: the latest ``limit``)."""
    where, params = [], []
    if since is not None:
        where.append("at >= ?")
        params.append(since)
    if url is not None:
        where.append("url = ?")
        params.append(url)
    if meaningful:
        where.append("meaningful = 1")
    sql = (f"SELECT {', '.join(COLUMNS)} FROM changes" + (f" WHERE {' AND '.join(where)}" if where else "")
           + f" ORDER BY at {'DESC' if newest_first else 'ASC'}, id" + (f" LIMIT {int(limit)}" if limit else ""))
    try:
        return [_record(r) for r in conn.execute(sql, params)]
    except sqlite3.OperationalError as exc:  # a store from before change records
        if "no such table" in str(exc):
            return []
        raise


def change_counts(conn: sqlite3.Connection) -> tuple[int, int]:
    """(changes recorded, of which meaningful)."""
    try:
        row = conn.execute("SELECT COUNT(*), COALESCE(SUM(meaningful), 0) FROM changes").fetchone()
    except sqlite3.OperationalError:
        return 0, 0
    return int(row[0]), int(row[1])


# -- watches -------------------------------------------------------------------
def add_watch(conn: sqlite3.Connection, w: Watch) -> None:
    """Add ``w``, or replace the watch of its URL (its last snapshot is kept only when what is
    watched is the same)."""
    old = get_watch(conn, w.url)
    same = old is not None and (old.css, old.xpath) == (w.css, w.xpath)
    conn.execute("INSERT INTO watches (url, css, xpath, ignore, every, added_at) VALUES (?,?,?,?,?,?) "
                 "ON CONFLICT(url) DO UPDATE SET css = excluded.css, xpath = excluded.xpath, "
                 "ignore = excluded.ignore, every = excluded.every" + ("" if same else ", title = NULL, text = NULL, "
                                                                       "links = NULL"),
                 (w.url, w.css, w.xpath, json.dumps(list(w.ignore)), w.every, w.added_at))


def remove_watch(conn: sqlite3.Connection, url: str) -> bool:
    return conn.execute("DELETE FROM watches WHERE url = ?", (url,)).rowcount > 0


def _watch(row: tuple) -> Watch:
    return Watch(row[0], row[1], row[2], tuple(json.loads(row[3] or "[]")), row[4], row[5])


def get_watch(conn: sqlite3.Connection, url: str) -> Watch | None:
    row = conn.execute("SELECT url, css, xpath, ignore, every, added_at FROM watches WHERE url = ?", (url,)).fetchone()
    return None if row is None else _watch(row)


def list_watches(conn: sqlite3.Connection) -> list[Watch]:
    try:
        rows = conn.execute("SELECT url, css, xpath, ignore, every, added_at FROM watches ORDER BY url").fetchall()
    except sqlite3.OperationalError:
        return []
    return [_watch(r) for r in rows]


def get_snapshot(conn: sqlite3.Connection, url: str) -> WatchSnapshot | None:
    row = conn.execute("SELECT title, text, links FROM watches WHERE url = ?", (url,)).fetchone()
    if row is None or row[1] is None:
        return None
    return WatchSnapshot(url, row[0], unpack(row[1]), json.loads(row[2] or "[]"))
