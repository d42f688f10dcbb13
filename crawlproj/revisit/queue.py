"""The long-term revisit queue: one SQLite table of :class:`UrlState`, indexed by due time.

Seed 001 kept one file per day; an index on ``next_due`` does the same job and
lets a refresher read "everything due before t" in order. Every write stamps a
row with a growing ``seq``, so a reader can also pick up rows rescheduled since
it last looked (:meth:`RevisitQueue.changed_since`). No Scrapy, no Twisted.

Writes are buffered and committed in one transaction by :meth:`commit`; WAL
mode keeps the table whole across a kill -9 (the open batch is lost whole).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterable, Iterator

from ..store import beside_store, settings_store
from ..store.sqlite import connect
from .estimator import PageHistory
from .state import UrlState

SCHEMA = """
CREATE TABLE IF NOT EXISTS revisit (
    url TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    depth INTEGER NOT NULL DEFAULT 0,
    first_access REAL NOT NULL,   -- crawl-clock seconds
    last_access REAL NOT NULL,
    unchanged REAL NOT NULL,      -- U: total of the intervals without a change
    changes INTEGER NOT NULL,     -- m: intervals with a change
    tc_min REAL,                  -- shortest interval with a change (NULL: none yet)
    interval REAL NOT NULL,       -- the interval that set next_due
    next_due REAL NOT NULL,
    rule TEXT NOT NULL,
    rate REAL,                    -- estimated changes per second (NULL: one visit so far)
    content_hash TEXT,
    etag TEXT,
    last_modified TEXT,
    visits INTEGER NOT NULL,
    not_modified INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    seq INTEGER NOT NULL,         -- write order: rows changed since a reader last looked
    sitemap_lastmod REAL,         -- the newest <lastmod> a sitemap gave (real Unix seconds)
    dated_changes REAL NOT NULL DEFAULT 0,   -- changes whose date was known
    dated_exposure REAL NOT NULL DEFAULT 0,  -- time known to be without change, from those dates
    dated_seen REAL,              -- the last dated observation
    source TEXT NOT NULL DEFAULT '',         -- what the rate rests on: dates | visits | prior
    probes INTEGER NOT NULL DEFAULT 0,       -- probes made before the page would be left alone
    kind TEXT NOT NULL DEFAULT '',           -- feed: an RSS or Atom feed (revisited first)
    planned REAL                  -- the interval the estimate asked for, when an overload stretched it
);
CREATE INDEX IF NOT EXISTS revisit_due ON revisit(next_due);
CREATE INDEX IF NOT EXISTS revisit_seq ON revisit(seq);
CREATE INDEX IF NOT EXISTS revisit_host ON revisit(host);
"""

COLUMNS = ("url", "host", "depth", "first_access", "last_access", "unchanged", "changes", "tc_min", "interval",
           "next_due", "rule", "rate", "content_hash", "etag", "last_modified", "visits", "not_modified", "errors",
           "sitemap_lastmod", "dated_changes", "dated_exposure", "dated_seen", "source", "probes", "kind", "planned")
#: Columns added since the first version, with their declarations (older tables gain them).
ADDED = {"sitemap_lastmod": "REAL", "dated_changes": "REAL NOT NULL DEFAULT 0",
         "dated_exposure": "REAL NOT NULL DEFAULT 0", "dated_seen": "REAL", "source": "TEXT NOT NULL DEFAULT ''",
         "probes": "INTEGER NOT NULL DEFAULT 0", "kind": "TEXT NOT NULL DEFAULT ''", "planned": "REAL"}


def state_row(state: UrlState, seq: int) -> tuple:
    """A URL's revisit state as a row of COLUMNS (and its sequence number), for any store of it."""
    h = state.history
    return (state.url, state.host, state.depth, h.first_access, h.last_access, h.unchanged, h.changes,
            None if math.isinf(h.tc_min) else h.tc_min, state.interval, state.next_due, state.rule, state.rate,
            state.content_hash, state.etag, state.last_modified, state.visits, state.not_modified, state.errors,
            state.sitemap_lastmod, state.dated_changes, state.dated_exposure, state.dated_seen, state.source,
            state.probes, state.kind, state.planned, seq)


def row_state(row: tuple) -> UrlState:
    """The revisit state a row of COLUMNS holds."""
    (url, host, depth, first, last, unchanged, changes, tc_min, interval, next_due, rule, rate, content_hash,
     etag, last_modified, visits, not_modified, errors, *rest) = row  # rest: columns added since (older rows lack them)
    history = PageHistory(first, last, unchanged, changes, math.inf if tc_min is None else tc_min)
    later = list(rest) + [None, 0.0, 0.0, None, "", 0, "", None][len(rest):]
    return UrlState(url, host, history, interval, next_due, rule, depth, rate, content_hash, etag, last_modified,
                    visits, not_modified, errors, *later)


class BufferedWrites:
    """Puts and deletes held until ``commit`` (shared by the SQLite and the Redis queues)."""

    def __init__(self) -> None:
        self._puts: dict[str, UrlState] = {}
        self._deletes: dict[str, str] = {}  # url -> its host

    def get(self, url: str) -> UrlState | None:
        raise NotImplementedError

    def buffered(self, url: str) -> tuple[bool, UrlState | None]:
        """Whether the URL has an uncommitted write, and the state it writes (None: deleted)."""
        if url in self._puts:
            return True, self._puts[url]
        return url in self._deletes, None

    def put(self, state: UrlState) -> None:
        self._deletes.pop(state.url, None)
        self._puts[state.url] = state

    def delete(self, url: str) -> None:
        state = self._puts.pop(url, None) or self.get(url)
        self._deletes[url] = state.host if state is not None else ""

    @property
    def pending(self) -> int:
        return len(self._puts) + len(self._deletes)

    def _take(self) -> tuple[dict[str, UrlState], dict[str, str]]:
        taken = self._puts, self._deletes
        self._puts, self._deletes = {}, {}
        return taken

    def _restore(self, puts: dict[str, UrlState], deletes: dict[str, str]) -> None:
        """A commit failed: keep its writes, under any made since."""
        self._puts, self._deletes = {**puts, **self._puts}, {**deletes, **self._deletes}


class RevisitQueue(BufferedWrites):
    """Reader and buffered writer of one revisit table."""

    @classmethod
    def from_settings(cls, settings) -> RevisitQueue:  # noqa: ANN001 - Scrapy Settings
        """``REVISIT_DB``, or beside the store: ``data/crawl.db`` -> ``data/crawl.revisit.db``."""
        return cls(settings.get("REVISIT_DB") or beside_store(settings_store(settings), "revisit"))

    def __init__(self, path: str) -> None:
        self.path = path
        self.conn = connect(path)
        self._owner = threading.get_ident()
        self._reader: sqlite3.Connection | None = None  # another thread's reads (a replan's sample)
        self.conn.executescript(SCHEMA)
        have = {row[1] for row in self.conn.execute("PRAGMA table_info(revisit)")}
        for column, kind in ADDED.items():  # a queue from an older version
            if column not in have:
                self.conn.execute(f"ALTER TABLE revisit ADD COLUMN {column} {kind}")
        self.seq = self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM revisit").fetchone()[0]
        super().__init__()

    # -- writing ----------------------------------------------------------
    def commit(self) -> None:
        if not self.pending:
            return
        puts, deletes = self._take()
        seq = self.seq + 1
        try:
            cur = self.conn.cursor()
            cur.execute("BEGIN")
            cur.executemany(f"INSERT OR REPLACE INTO revisit ({', '.join(COLUMNS)}, seq) "
                            f"VALUES ({', '.join('?' * (len(COLUMNS) + 1))})", [state_row(s, seq) for s in puts.values()])
            cur.executemany("DELETE FROM revisit WHERE url = ?", [(u,) for u in deletes])
            cur.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            self._restore(puts, deletes)
            raise
        self.seq = seq

    def close(self) -> None:
        try:
            self.commit()
        finally:
            self.conn.close()
            if self._reader is not None:
                self._reader.close()

    @property
    def samples_off_thread(self) -> bool:
        """The replan draws its samples in a thread, through a connection of its own (WAL lets
        it read beside the writer); an in-memory or temporary queue has no second connection to it."""
        return self.path not in ("", ":memory:")

    def _reading(self) -> sqlite3.Connection:
        """The connection for a read: the queue's own, or on another thread a reader of its
        own (one thread's at a time: the replan draws one sample at a time)."""
        if threading.get_ident() == self._owner:
            return self.conn
        if self._reader is None:
            self._reader = connect(self.path)
        return self._reader

    # -- reading ----------------------------------------------------------
    def get(self, url: str) -> UrlState | None:
        """The URL's state, the uncommitted write included."""
        held, state = self.buffered(url)
        if held:
            return state
        row = self.conn.execute(f"SELECT {', '.join(COLUMNS)} FROM revisit WHERE url = ?", (url,)).fetchone()
        return row_state(row) if row else None

    def due(self, after: float, until: float, limit: int) -> list[tuple[float, str]]:
        """(next_due, url) of rows due in ``[after, until]``, earliest first."""
        return self.conn.execute("SELECT next_due, url FROM revisit WHERE next_due >= ? AND next_due <= ? "
                                 "ORDER BY next_due LIMIT ?", (after, until, limit)).fetchall()

    def changed_since(self, seq: int, until: float) -> list[tuple[float, str]]:
        """(next_due, url) of rows written after ``seq`` and due by ``until``."""
        return self.conn.execute("SELECT next_due, url FROM revisit WHERE seq > ? AND next_due <= ?",
                                 (seq, until)).fetchall()

    def committed_seq(self) -> int:
        return self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM revisit").fetchone()[0]

    def host_loads(self) -> Iterator[tuple[str, float]]:
        """(host, L = sum of 1/interval over its pages) for every host."""
        yield from self.conn.execute("SELECT host, SUM(1.0 / interval) FROM revisit GROUP BY host")

    def host_states(self, host: str) -> list[UrlState]:
        """Every state of ``host``, uncommitted writes included."""
        rows = self.conn.execute(f"SELECT {', '.join(COLUMNS)} FROM revisit WHERE host = ?", (host,))
        states = {s.url: s for s in map(row_state, rows) if s.url not in self._deletes}
        states.update((u, s) for u, s in self._puts.items() if s.host == host)
        return list(states.values())

    def rate_sample(self, n: int) -> tuple[list[float], int]:
        """Up to ``n`` estimated rates drawn at random, and how many rows have one."""
        conn = self._reading()
        total = conn.execute("SELECT COUNT(*) FROM revisit WHERE rate IS NOT NULL").fetchone()[0]
        rates = [r for (r,) in conn.execute(
            "SELECT rate FROM revisit WHERE rate IS NOT NULL ORDER BY RANDOM() LIMIT ?", (n,))]
        return rates, total

    def state_sample(self, n: int) -> list[UrlState]:
        """Up to ``n`` states drawn at random (the planner's priors are fitted to them)."""
        return [row_state(r) for r in self._reading().execute(
            f"SELECT {', '.join(COLUMNS)} FROM revisit ORDER BY RANDOM() LIMIT ?", (n,))]

    def urls(self) -> Iterator[str]:
        """Every URL the queue tracks (each a stored page)."""
        for (url,) in self.conn.execute("SELECT url FROM revisit"):
            yield url

    def count(self) -> int:
        return self._reading().execute("SELECT COUNT(*) FROM revisit").fetchone()[0]

    def query(self, sql: str, params: Iterable = ()) -> list[tuple]:
        return self.conn.execute(sql, tuple(params)).fetchall()

