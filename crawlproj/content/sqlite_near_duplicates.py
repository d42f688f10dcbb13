"""The near-duplicate index on disk, in SQLite: one machine's crawl in flat memory.

Same contract as :class:`~crawlproj.content.near_duplicates.NearDuplicateIndex` (exact by
content hash first, then MinHash LSH; only canonical pages enter), and the same layout
as the Redis index (:mod:`crawlproj.distributed.near_duplicates`), in three tables:

* ``canonical``: key -> content hash, signature (4 bytes x permutations), indexed by hash;
* ``bands``: (band, band hash) -> the canonical page's row, datasketch's b x r for the threshold;
  band -1 holds a short page's shingle-set digest (:attr:`Fingerprint.set_digest`);

The in-memory index kept every canonical page's signature and LSH bands in the
process: about 4 KB a page, which was the rest of a long crawl's memory growth once
parse trees were freed, and 400 GB at 100 million pages. Here a check is one indexed
look-up for the hash and one for the bands (about 0.1 ms), and memory holds only the
writes since the last commit. Writes join one transaction, committed just before each
store commit (the pipeline's ``storage.commit``), so a kill -9 keeps what the store keeps.
"""

from __future__ import annotations

import hashlib
import sqlite3

import numpy as np

from .. import defaults
from ..store.sqlite import connect
from .minhash_lsh import minhash_lsh
from .near_duplicates import SET_DIGEST, Fingerprint, Match, SigningShape

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS canonical (key TEXT PRIMARY KEY, digest TEXT NOT NULL, signature BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS canonical_digest ON canonical (digest)",
    "CREATE TABLE IF NOT EXISTS bands (band INTEGER NOT NULL, hash INTEGER NOT NULL, page INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS bands_lookup ON bands (band, hash)",
    "CREATE INDEX IF NOT EXISTS bands_page ON bands (page)",
)


#: The band that holds a short page's shingle-set digest (LSH bands are numbered from 0).
SET_BAND = -1


def _as_int64(digest: str) -> int:
    """A hex digest's first 64 bits, as a signed integer (SQLite's INTEGER)."""
    return int.from_bytes(bytes.fromhex(digest.removeprefix(SET_DIGEST)[:16]), "little", signed=True)


class SqliteNearDuplicateIndex(SigningShape):
    """The near-duplicate index in one SQLite file (WAL) at ``path`` (see the module docstring).
    ``storage`` is the index itself: the pipeline commits and closes it."""

    def __init__(self, path: str, threshold: float = defaults.NEAR_DUPLICATES_THRESHOLD,
                 num_perm: int = defaults.NEAR_DUPLICATES_NUM_PERM, min_shingles: int = 1,
                 word_n: int = 5, char_n: int = 5, max_chars: int = 0) -> None:
        super().__init__(threshold, num_perm, min_shingles, word_n, char_n, max_chars)
        self.path = self.where = path
        self.ranges = minhash_lsh(threshold, num_perm).hashranges
        self.conn: sqlite3.Connection | None = connect(path)
        for statement in _SCHEMA:
            self.conn.execute(statement)
        self.storage = self
        self._check_shape()
        self._band_old_entries()

    def _check_shape(self) -> None:
        row = self.conn.execute("SELECT signature FROM canonical WHERE length(signature) > 0 LIMIT 1").fetchone()
        if row is not None and len(row[0]) != 4 * self.num_perm:
            raise ValueError(f"the stored index has {len(row[0]) // 4} permutations, not {self.num_perm}")

    def _band_old_entries(self) -> None:
        """An index written before the bands were kept on disk: band its pages once."""
        if self.conn.execute("SELECT 1 FROM bands LIMIT 1").fetchone() is not None:
            return
        rows = self.conn.execute("SELECT rowid, signature FROM canonical WHERE length(signature) > 0").fetchall()
        if rows:
            self._begin()
            self.conn.executemany("INSERT INTO bands VALUES (?,?,?)", [
                (band, value, page) for page, blob in rows for band, value in enumerate(self._bands(blob))])
            self.commit()

    def __len__(self) -> int:
        return self.conn.execute("SELECT count(*) FROM canonical").fetchone()[0]

    def _bands(self, signature: bytes) -> list[int]:
        """Each band's hash, as a signed 64-bit integer (SQLite's INTEGER)."""
        return [int.from_bytes(hashlib.blake2b(signature[4 * a:4 * b], digest_size=8).digest(), "little", signed=True)
                for a, b in self.ranges]

    def _begin(self) -> None:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN")

    def add(self, key: str, print_: Fingerprint) -> Match | None:
        """The canonical page this one duplicates, or None (then ``key`` becomes canonical)."""
        if print_.empty:
            return None
        owner = self.conn.execute("SELECT key FROM canonical WHERE digest = ? ORDER BY rowid LIMIT 1",
                                  (print_.digest,)).fetchone()
        if owner is not None and owner[0] != key:
            return Match(owner[0], "exact", 1.0)
        if print_.values is None:  # too short to sign: kept by its digest and its shingle set, for its copies
            band = [] if print_.set_digest is None else [(SET_BAND, _as_int64(print_.set_digest))]
            if band:
                owner = self.conn.execute("SELECT c.key FROM bands b JOIN canonical c ON c.rowid = b.page "
                                          "WHERE b.band = ? AND b.hash = ? ORDER BY b.page LIMIT 1", band[0]).fetchone()
                if owner is not None and owner[0] != key:
                    return Match(owner[0], "near", 1.0)
            self._insert(key, print_.digest, b"", band)
            return None
        values = np.asarray(print_.values).astype("<u4")
        signature = values.tobytes()
        bands = self._bands(signature)
        wanted = " OR ".join(["(b.band = ? AND b.hash = ?)"] * len(bands))
        candidates = self.conn.execute(
            f"SELECT DISTINCT c.key, c.signature FROM bands b JOIN canonical c ON c.rowid = b.page WHERE {wanted}",
            [x for pair in enumerate(bands) for x in pair]).fetchall()
        best = self.best_match(values, candidates, key)
        if best is not None:
            return best
        self._insert(key, print_.digest, signature, list(enumerate(bands)))
        return None

    def _insert(self, key: str, digest: str, signature: bytes, bands: list[tuple[int, int]]) -> None:
        self._begin()
        old = self.conn.execute("SELECT rowid FROM canonical WHERE key = ?", (key,)).fetchone()
        if old is not None:  # a canonical page fetched again: its entry is replaced
            self.conn.execute("DELETE FROM bands WHERE page = ?", old)
            self.conn.execute("UPDATE canonical SET digest = ?, signature = ? WHERE rowid = ?", (digest, signature, old[0]))
            page = old[0]
        else:
            page = self.conn.execute("INSERT INTO canonical VALUES (?,?,?)", (key, digest, signature)).lastrowid
        self.conn.executemany("INSERT INTO bands VALUES (?,?,?)", [(band, value, page) for band, value in bands])

    def commit(self) -> None:
        # After close (which committed): the store's last flush at the spider's close comes later.
        if self.conn is not None and self.conn.in_transaction:
            self.conn.execute("COMMIT")

    def close(self) -> None:
        if self.conn is None:
            return
        try:
            self.commit()
        finally:
            self.conn.close()
            self.conn = None
