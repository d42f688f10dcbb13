"""The payload-digest index: each payload's first capture, across URLs and across crawls.

Heritrix and Browsertrix keep one so that an unchanged payload seen before, at this URL or
at any other (a mirror, a copy of a file), is written as a ``revisit`` record pointing at
the first capture rather than archived again. It lives in SQLite beside the store
(``data/crawl.db`` -> ``data/crawl.digests.db``), so a later crawl into the same store
points at the captures of the earlier ones. A digest is recorded only after its record
is in the WARC file, so a kill -9 can lose an entry (the payload is then archived again
next time) but never leave one that points at nothing.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass

from .sqlite import use_wal

_SCHEMA = """
CREATE TABLE IF NOT EXISTS digests (
    digest TEXT PRIMARY KEY,     -- WARC-Payload-Digest of the first capture (sha1:base32)
    record_id TEXT NOT NULL,     -- its WARC-Record-ID
    uri TEXT NOT NULL,           -- its WARC-Target-URI
    date TEXT NOT NULL,          -- its WARC-Date
    warc_file TEXT NOT NULL      -- the WARC file holding it
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class FirstCapture:
    record_id: str
    uri: str
    date: str
    warc_file: str


class DigestIndex:
    """payload digest -> :class:`FirstCapture`, in SQLite. Entries are committed in batches
    (every ``commit_every`` additions or ``commit_seconds``), and kept until committed in
    memory too, so a lookup sees every addition at once."""

    def __init__(self, path: str, commit_every: int = 200, commit_seconds: float = 2.0) -> None:
        self.path = path
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._conn = sqlite3.connect(path, check_same_thread=False, timeout=30)
        use_wal(self._conn)
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)
        self._pending: dict[str, FirstCapture] = {}
        self.commit_every = commit_every
        self.commit_seconds = commit_seconds
        self._committed_at = time.monotonic()

    def get(self, digest: str) -> FirstCapture | None:
        pending = self._pending.get(digest)
        if pending is not None:
            return pending
        row = self._conn.execute("SELECT record_id, uri, date, warc_file FROM digests WHERE digest = ?",
                                 (digest,)).fetchone()
        return FirstCapture(*row) if row else None

    def add(self, digest: str, capture: FirstCapture) -> None:
        self._pending.setdefault(digest, capture)
        if len(self._pending) >= self.commit_every or time.monotonic() - self._committed_at >= self.commit_seconds:
            self.commit()

    def commit(self) -> None:
        if self._pending:
            # The first capture wins: another crawl into the same store may have recorded it meanwhile.
            self._conn.executemany("INSERT OR IGNORE INTO digests VALUES (?, ?, ?, ?, ?)",
                                   [(d, c.record_id, c.uri, c.date, c.warc_file) for d, c in self._pending.items()])
            self._conn.commit()
            self._pending.clear()
        self._committed_at = time.monotonic()

    def warc_files(self) -> list[str]:
        """Every WARC file an entry points into."""
        self.commit()
        return [f for (f,) in self._conn.execute("SELECT DISTINCT warc_file FROM digests")]

    def __len__(self) -> int:
        self.commit()
        return self._conn.execute("SELECT COUNT(*) FROM digests").fetchone()[0]

    def close(self) -> None:
        self.commit()
        self._conn.close()
