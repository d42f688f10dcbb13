"""The frontier's durable record in ``JOBDIR``: what was queued, and what was completed.

Pure file I/O, no Scrapy and no Twisted. Two append-only files:

* ``enqueued.log``: one framed record per accepted request:
  ``(fingerprint, dont_filter, host, level, entry)``.
* ``completed.log``: 8-byte fingerprints of URLs the store has committed.

Rule that makes resume safe: :meth:`FrontierJournal.complete` flushes the
enqueued log before it writes a completion, so when a page counts as completed
every link it produced is already on record. After a kill -9 the pending work
is every enqueued record whose fingerprint is not completed; requests in flight
and pages in an uncommitted store batch are fetched again (at-least-once).

Both files are written with buffered ``write`` and flushed to the OS, not
fsynced: a killed process loses nothing the OS holds. A torn last record (a
kill in mid-write) is detected by its frame and cut off on replay.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

# Frame: body length, then the record's fingerprint and dont_filter flag, readable without
# unpickling the body (the first pass of a replay reads only these).
_FRAME = struct.Struct("<IQ?")
Record = tuple[int, bool, str, int, Any]  # (fingerprint, dont_filter, host, level, entry)


def _frame(record: Record) -> bytes:
    body = pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
    return _FRAME.pack(len(body), record[0], record[1]) + body


def fingerprint(url_key: str) -> int:
    """A 64-bit fingerprint of a URL key (the canonical URL for GET requests)."""
    return int.from_bytes(hashlib.blake2b(url_key.encode("utf-8", "surrogateescape"), digest_size=8).digest(), "little")


class FrontierJournal:
    """Append-only enqueued/completed logs with replay and compaction."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self.enqueued_path = os.path.join(directory, "enqueued.log")
        self.completed_path = os.path.join(directory, "completed.log")
        self._enqueued: Any = None
        self._completed: Any = None
        self.enqueued = 0  # records written by this process
        self.completed = 0

    # -- reading ------------------------------------------------------------
    def _read_records(self) -> Iterator[Record]:
        """Every whole record of the enqueued log; a torn tail is cut off the file."""
        if not os.path.exists(self.enqueued_path):
            return
        good = 0
        with open(self.enqueued_path, "rb") as fh:
            while True:
                head = fh.read(_FRAME.size)
                if len(head) < _FRAME.size:
                    break
                length = _FRAME.unpack(head)[0]
                body = fh.read(length)
                if len(body) < length:
                    break
                try:
                    record = pickle.loads(body)
                except Exception:  # noqa: BLE001 - a torn or garbled record ends the log
                    break
                good = fh.tell()
                yield record
        if good != os.path.getsize(self.enqueued_path):
            with open(self.enqueued_path, "r+b") as fh:
                fh.truncate(good)

    def _requeued(self) -> set[int]:
        """Fingerprints logged with ``dont_filter`` (retries, requeues), from the frame heads alone."""
        if not os.path.exists(self.enqueued_path):
            return set()
        found: set[int] = set()
        size = os.path.getsize(self.enqueued_path)
        with open(self.enqueued_path, "rb") as fh:
            while len(head := fh.read(_FRAME.size)) == _FRAME.size:
                length, fp, dont_filter = _FRAME.unpack(head)
                if fh.tell() + length > size:
                    break  # a torn tail (the full pass cuts it off)
                if dont_filter:
                    found.add(fp)
                fh.seek(length, os.SEEK_CUR)
        return found

    def _completed_set(self) -> np.ndarray:
        if not os.path.exists(self.completed_path):
            return np.empty(0, dtype=np.uint64)
        with open(self.completed_path, "rb") as fh:
            data = fh.read()
        data = data[: len(data) - len(data) % 8]  # a torn last fingerprint
        return np.unique(np.frombuffer(data, dtype="<u8").astype(np.uint64))

    def replay(self, seen: Callable[[Record], None] | None = None, batch: int = 65536) -> Iterator[Record]:
        """Yield the pending records, oldest first; call ``seen`` on every record.

        A URL logged more than once (retries and requeues are sent with
        ``dont_filter``) is yielded once.
        """
        completed = self._completed_set()
        requeued = self._requeued()
        yielded: set[int] = set()
        pending: list[Record] = []

        def flush() -> Iterator[Record]:
            fps = np.fromiter((r[0] for r in pending), dtype=np.uint64, count=len(pending))
            done = np.isin(fps, completed) if len(completed) else np.zeros(len(pending), dtype=bool)
            for record, is_done in zip(pending, done):
                if is_done:
                    continue
                fp = record[0]
                if fp in requeued:
                    if fp in yielded:
                        continue
                    yielded.add(fp)
                yield record
            pending.clear()

        for record in self._read_records():
            if seen is not None:
                seen(record)
            pending.append(record)
            if len(pending) >= batch:
                yield from flush()
        if pending:
            yield from flush()

    # -- writing ------------------------------------------------------------
    def open(self) -> None:
        self._enqueued = open(self.enqueued_path, "ab")
        self._completed = open(self.completed_path, "ab")

    def append(self, record: Record) -> None:
        self._enqueued.write(_frame(record))
        self.enqueued += 1

    def complete(self, fingerprints: Iterable[int]) -> None:
        """Record completions, after flushing every enqueued record written so far."""
        data = b"".join(int(fp).to_bytes(8, "little") for fp in fingerprints)
        if not data:
            return
        self._enqueued.flush()
        self._completed.write(data)
        self._completed.flush()
        self.completed += len(data) // 8

    def flush(self) -> None:
        if self._enqueued is not None:
            self._enqueued.flush()
            self._completed.flush()

    def compact(self, pending: Iterable[Record], checkpoint: Callable[[], None]) -> int:
        """Rewrite the enqueued log as ``pending`` and empty the completed log.

        ``checkpoint`` must make the URL-seen state durable first: compaction
        drops completed records, which were the only other trace of those URLs.
        Each step leaves a consistent pair of files if the process dies there.
        """
        tmp = self.enqueued_path + ".new"
        count = 0
        with open(tmp, "wb") as fh:
            for record in pending:
                fh.write(_frame(record))
                count += 1
        checkpoint()
        os.replace(tmp, self.enqueued_path)
        with open(self.completed_path, "wb"):
            pass
        return count

    def resume(self, seen: Callable[[Record], None], requeue: Callable[[Record], None],
               checkpoint: Callable[[], None] | None) -> tuple[int, int]:
        """Replay the log into a new process and open it for writing: ``seen`` is called on
        every record (the URL-seen state and the per-site counts are rebuilt from them),
        ``requeue`` on each pending one. With ``checkpoint`` (it saves the URL-seen state)
        the log is compacted to the pending records; without it the whole log is kept.
        Returns (pending, recorded)."""
        recorded = 0

        def count(record: Record) -> None:
            nonlocal recorded
            recorded += 1
            seen(record)

        def pending() -> Iterator[Record]:
            for record in self.replay(seen=count):
                requeue(record)
                yield record

        if checkpoint is not None:
            waiting = self.compact(pending(), checkpoint)
        else:
            waiting = sum(1 for _ in pending())
        self.open()
        return waiting, recorded

    def close(self) -> None:
        for fh in (self._enqueued, self._completed):
            if fh is not None:
                fh.close()
        self._enqueued = self._completed = None
