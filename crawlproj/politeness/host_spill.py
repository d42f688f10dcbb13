"""Idle politeness keys' state out of memory, and back when the key comes up again (pure logic
over a local SQLite file: no Twisted).

A broad crawl meets millions of hosts and visits most of them a few times; what each one
leaves (its Waseda window, Crawl-delay, failures, session, the rule and interval in force:
about 500 bytes) would keep a worker's memory growing with every host it has seen. The
:class:`KeyStateSpill` keeps the ``limit`` keys used last in memory (an LRU); the least
recently used one beyond it is pickled into a SQLite table and read back, whole, the next
time anything asks about it, so a key's rests and rules are the same after a round trip.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Hashable


class KeyStateSpill:
    """An LRU of keys in memory over a spill table. ``take(key)`` removes and returns the key's
    state from the caller's structures (None: nothing to keep); ``give(key, state)`` puts it back."""

    def __init__(self, limit: int, take: Callable[[Hashable], object | None],
                 give: Callable[[Hashable, object], None], directory: str = "") -> None:
        self.limit, self.take, self.give = limit, take, give
        self.recent: OrderedDict[Hashable, None] = OrderedDict()
        self.directory = directory
        self.db: sqlite3.Connection | None = None
        self.spilled = self.loaded = 0  # counts, for the stats

    def _conn(self) -> sqlite3.Connection:
        if self.db is None:  # made on first spill: a crawl of few hosts never writes it
            handle, path = tempfile.mkstemp(prefix="host-state-", suffix=".db", dir=self.directory or None)
            os.close(handle)
            self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            os.unlink(path)  # scratch: gone with the process, whatever ends it
            self.db.execute("PRAGMA journal_mode=OFF")
            self.db.execute("PRAGMA synchronous=OFF")
            self.db.execute("CREATE TABLE spill (key BLOB PRIMARY KEY, state BLOB NOT NULL)")
        return self.db

    def touch(self, key: Hashable) -> None:
        """``key`` is used now: its state is brought back if it was spilled; the least recently
        used key beyond ``limit`` goes out."""
        if key in self.recent:
            self.recent.move_to_end(key)
            return
        if self.db is not None:
            name = pickle.dumps(key)
            row = self.db.execute("SELECT state FROM spill WHERE key = ?", (name,)).fetchone()
            if row is not None:
                self.db.execute("DELETE FROM spill WHERE key = ?", (name,))
                self.give(key, pickle.loads(row[0]))
                self.loaded += 1
        self.recent[key] = None
        while len(self.recent) > self.limit:
            old, _ = self.recent.popitem(last=False)
            state = self.take(old)
            if state is not None:
                self._conn().execute("INSERT OR REPLACE INTO spill VALUES (?, ?)",
                                     (pickle.dumps(old), pickle.dumps(state, protocol=5)))
                self.spilled += 1

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
