"""Where the near-duplicate index keeps its canonical pages: the one small interface.

An :class:`IndexStorage` holds one entry per canonical page: its key (URL),
the content hash of its main text and its MinHash values. The index loads
every entry when it opens and writes each new one through, so the storage only
has to append, replace, list and commit. :class:`SqliteIndexStorage` is the
single-machine one (a file in the data directory); the distributed mode puts
the same four operations on Redis.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import numpy as np

from ..store.sqlite import connect

Entry = tuple[str, str, np.ndarray]  # key, content hash, hash values


class IndexStorage(Protocol):
    def entries(self) -> Iterator[Entry]:
        """Every stored entry, to rebuild the index from."""

    def put(self, key: str, digest: str, values: np.ndarray) -> None:
        """Add (or replace) the entry of ``key``; durable after :meth:`commit`."""

    def commit(self) -> None: ...

    def close(self) -> None: ...


class MemoryIndexStorage:
    """Keeps nothing beyond the process: for tests and throw-away crawls."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str, np.ndarray]] = {}

    def entries(self) -> Iterator[Entry]:
        for key, (digest, values) in self._entries.items():
            yield key, digest, values

    def put(self, key: str, digest: str, values: np.ndarray) -> None:
        self._entries[key] = (digest, values)

    def commit(self) -> None:
        pass

    def close(self) -> None:
        pass


class SqliteIndexStorage:
    """One SQLite file (WAL): a kill -9 keeps every committed entry.

    Hash values are stored as 32-bit integers (they are below 2^32), 512 bytes
    a page at 128 permutations.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.conn = connect(path)
        self.conn.execute("CREATE TABLE IF NOT EXISTS canonical (key TEXT PRIMARY KEY, digest TEXT NOT NULL, "
                          "signature BLOB NOT NULL)")
        self._pending: dict[str, tuple[str, bytes]] = {}

    def entries(self) -> Iterator[Entry]:
        for key, digest, blob in self.conn.execute("SELECT key, digest, signature FROM canonical ORDER BY rowid"):
            yield key, digest, np.frombuffer(blob, dtype="<u4").astype(np.uint64)

    def put(self, key: str, digest: str, values: np.ndarray) -> None:
        self._pending[key] = (digest, values.astype("<u4").tobytes())

    def commit(self) -> None:
        if not self._pending:
            return
        rows = [(key, digest, blob) for key, (digest, blob) in self._pending.items()]
        with self.conn:  # one transaction
            self.conn.execute("BEGIN")
            self.conn.executemany("INSERT OR REPLACE INTO canonical VALUES (?,?,?)", rows)
        self._pending.clear()

    def close(self) -> None:
        try:
            self.commit()
        finally:
            self.conn.close()
