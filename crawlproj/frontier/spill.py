"""Disk-backed FIFO queues for the frontier: head and tail in memory, the middle on disk.

Pure file I/O, no Scrapy and no Twisted. A :class:`SpillQueue` keeps at most
``buffer`` entries at each end in memory. When its tail buffer fills, the
whole buffer is pickled (and zlib-compressed) as one *chunk* and appended to
the shared :class:`SegmentStore`; when its head runs dry it reads the oldest
chunk back. A queue therefore costs memory for two buffers and one small
reference per chunk, not per entry, so a 10 M-entry frontier over 100 k hosts
sits mostly on disk.

Segments are append-only files of ``segment_bytes``; a segment is deleted as
soon as every chunk in it has been read back. The segments are scratch space,
not the durable record: resume after a crash replays the frontier log
(:mod:`crawlproj.frontier.journal`), so the store is wiped when opened.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import shutil
import zlib
from collections import deque
from typing import Any

Chunk = tuple[int, int, int, int]  # (segment, offset, length, entries)


#: A crawl without JOBDIR spills into a temporary folder named for its process.
SPILL_PREFIX = "crawlproj-spill-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def remove_stale_spills(parent: str) -> list[str]:
    """Remove the temporary spill folders of crawls whose process is gone (killed: a closing
    crawl removes its own); those of running crawls stay. Returns the folders removed."""
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(SPILL_PREFIX):
            continue
        pid = name[len(SPILL_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
            removed.append(name)
    return removed


class SegmentStore:
    """Append-only segment files holding pickled chunks of queue entries."""

    def __init__(self, directory: str, segment_bytes: int = 64 * 2**20, compress: int = 1) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.compress = compress
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        self._segment = -1
        self._writer: Any = None
        self._written = 0
        self._readers: dict[int, Any] = {}
        self._live: dict[int, int] = {}  # segment -> chunks not yet read back
        self.disk_bytes = 0  # bytes in segment files that still exist
        self.disk_entries = 0  # entries in chunks not yet read back
        self._open_segment()

    @classmethod
    def from_settings(cls, s: Any) -> SegmentStore | None:
        """The crawl's store: in ``FRONTIER_SPILL_DIR``, else ``JOBDIR/frontier/spill``, else a
        temporary directory; none when ``FRONTIER_FRONT_BUFFER`` or ``FRONTIER_BACK_BUFFER``
        is 0 (queues stay in memory)."""
        if not (s.getint("FRONTIER_FRONT_BUFFER") and s.getint("FRONTIER_BACK_BUFFER")):
            return None
        jobdir = s.get("JOBDIR")
        directory = s.get("FRONTIER_SPILL_DIR") or (os.path.join(jobdir, "frontier", "spill") if jobdir else None)
        if directory is None:
            remove_stale_spills(tempfile.gettempdir())
            directory = tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{os.getpid()}-")
        return cls(directory, segment_bytes=s.getint("FRONTIER_SEGMENT_BYTES"))

    def _path(self, segment: int) -> str:
        return os.path.join(self.directory, f"{segment:08d}.seg")

    def _open_segment(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._maybe_delete(self._segment)
        self._segment += 1
        self._writer = open(self._path(self._segment), "wb")
        self._written = 0
        self._live[self._segment] = 0

    def write(self, entries: list[Any]) -> Chunk:
        data = pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL)
        if self.compress:
            data = zlib.compress(data, self.compress)
        if self._written >= self.segment_bytes:
            self._open_segment()
        offset = self._written
        self._writer.write(data)
        self._written += len(data)
        self._live[self._segment] += 1
        self.disk_bytes += len(data)
        self.disk_entries += len(entries)
        return self._segment, offset, len(data), len(entries)

    def read(self, chunk: Chunk) -> list[Any]:
        segment, offset, length, count = chunk
        if segment == self._segment:
            self._writer.flush()
        reader = self._readers.get(segment)
        if reader is None:
            reader = self._readers[segment] = open(self._path(segment), "rb")
        reader.seek(offset)
        data = reader.read(length)
        if len(data) != length:
            raise OSError(f"spill segment {self._path(segment)} is truncated at offset {offset}")
        self._live[segment] -= 1
        self.disk_entries -= count
        self._maybe_delete(segment)
        return pickle.loads(zlib.decompress(data) if self.compress else data)

    def _maybe_delete(self, segment: int) -> None:
        if segment == self._segment or self._live.get(segment):
            return
        reader = self._readers.pop(segment, None)
        if reader is not None:
            reader.close()
        path = self._path(segment)
        try:
            self.disk_bytes -= os.path.getsize(path)
            os.remove(path)
        except FileNotFoundError:
            pass
        self._live.pop(segment, None)

    def close(self, remove: bool = True) -> None:
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if remove:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.disk_bytes = self.disk_entries = 0


class SpillQueue:
    """A FIFO keeping ``buffer`` entries at each end in memory and chunks of the middle on disk.

    Order: head (oldest) < chunks on disk < tail (newest). An append goes to the
    head directly while nothing older is on disk or in the tail, so a short
    queue never touches the disk.
    """

    __slots__ = ("store", "buffer", "head", "tail", "chunks", "size")

    def __init__(self, store: SegmentStore, buffer: int = 256) -> None:
        self.store = store
        self.buffer = max(1, buffer)
        self.head: deque[Any] = deque()
        self.tail: list[Any] = []
        self.chunks: deque[Chunk] = deque()
        self.size = 0

    def append(self, entry: Any) -> None:
        self.size += 1
        if not self.chunks and not self.tail and len(self.head) < self.buffer:
            self.head.append(entry)
            return
        self.tail.append(entry)
        if len(self.tail) >= self.buffer:
            self.chunks.append(self.store.write(self.tail))
            self.tail = []

    def popleft(self) -> Any:
        if not self.head:
            if self.chunks:
                self.head.extend(self.store.read(self.chunks.popleft()))
            elif self.tail:
                self.head.extend(self.tail)
                self.tail = []
            else:
                raise IndexError("pop from an empty SpillQueue")
        self.size -= 1
        return self.head.popleft()

    def __len__(self) -> int:
        return self.size

    @property
    def in_memory(self) -> int:
        return len(self.head) + len(self.tail)


def spill_factory(store: SegmentStore, front_buffer: int, back_buffer: int):
    """A ``queue_factory`` for :class:`~crawlproj.frontier.tiers.TwoTierFrontier`.

    The few front-tier queues get large buffers; the many back-tier queues
    (one per active key) get small ones, so memory stays bounded by the number
    of active keys rather than the number of URLs.
    """

    def factory(name: str) -> SpillQueue:
        return SpillQueue(store, front_buffer if name.startswith("front") else back_buffer)

    return factory
