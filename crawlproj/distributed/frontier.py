"""The two-tier frontier's shared state in Redis, partitioned by host hash.

:class:`RedisFrontier` has the interface of :class:`~crawlproj.frontier.tiers.TwoTierFrontier`
(push, pop, release, defer, next_due), so :class:`~crawlproj.frontier.scheduler.FrontierScheduler`
keeps every politeness rule and only the state moves to Redis (layout in :mod:`.scripts`):

* per politeness key, one queue per priority level (the front tier's order, per host);
* per partition, a sorted set of keys by next-allowed time (the back tier's heap);
* a lease per key in flight: one request per host across all workers; a lease past its
  expiry, or held by a worker whose heartbeat stopped, is released by any worker;
* per worker, the entries it was handed and has not stored yet: if it dies they go
  back to the head of their queues, so nothing is lost.

A key's partition is ``crc32(key) % partitions``. Workers lease partitions
(:meth:`RedisFrontier.heartbeat`), each holding its share as workers join and leave;
a worker pops only from its own partitions, and a URL found by any worker is pushed
to its host's partition. Pushes are buffered and sent in one pipeline; a pop takes
up to ``batch`` due keys in one script call. Times in Redis are wall-clock milliseconds.
"""

from __future__ import annotations

import time
import zlib
from collections import deque
from collections.abc import Hashable, Iterable
from typing import Any

import redis

from ..frontier.journal import fingerprint
from ..frontier.urlseen import key_of
from . import scripts
from .entries import pack, unpack


def fp_bytes(fp: int) -> bytes:
    """A URL's fingerprint as the 8 bytes that head its queue item and name its pending record."""
    return fp.to_bytes(8, "little")


def partition_of(key: Hashable, partitions: int) -> int:
    """The partition owning politeness key ``key`` (stable across processes and machines)."""
    return zlib.crc32(str(key).encode("utf-8")) % partitions


class RedisFrontier:
    """One worker's view of the shared frontier (see the module docstring), a
    :class:`~crawlproj.frontier.protocol.Frontier` that keeps each URL at the level it
    was pushed at."""

    reprioritises = False
    hold_expired = 0

    def __init__(self, client: redis.Redis, prefix: str, worker: str, partitions: int = 64, levels: int = 8,
                 batch: int = 16, lease_seconds: float = 120.0, worker_ttl: float = 15.0,
                 poll_seconds: float = 0.25, shared: bool = False, clock=time.monotonic, group_cap: int = 0,
                 group_rate: float = 0.0) -> None:
        self.r = client
        self.prefix, self.worker, self.partitions, self.levels = prefix, worker, partitions, levels
        self.batch, self.lease_ms = batch, int(lease_seconds * 1000)
        self.worker_ttl_ms = int(worker_ttl * 1000)
        self.poll = poll_seconds
        # Shared: take due keys from every partition, not only the owned ones (a few workers on
        # one machine; the pop still leases each key to one worker at a time).
        self.shared = shared
        self.clock = clock
        self.owned: list[int] = []
        self.seen = None  # a RedisBloomDupeFilter: URLs are marked seen with their push
        self.returned = 0  # entries of dead workers this worker put back
        self.leases_expired = 0
        self._scripts = {name: client.register_script(getattr(scripts, name))
                         for name in ("PUSH", "POP", "RELEASE", "DEFER", "COMPLETE", "HEARTBEAT", "REAP")}
        self._pushes: list[tuple] = []
        self._popped: deque[tuple[str, Any]] = deque()  # leased to this worker, not handed out yet
        self._next_due_ms: float | None = None
        self._quiet_until = 0.0  # monotonic: no key of ours is due before this (no need to ask Redis)
        self._counts = (0, 0, -1.0)  # queued, in flight, when read (monotonic)
        # What the scheduler reads of TwoTierFrontier:
        self.in_flight: dict[Hashable, float] = {}
        self.next_allowed: dict[Hashable, float] = {}
        self.back: dict = {}
        self.group_cap = group_cap
        self.group_gap_ms = round(1000.0 / group_rate) if group_rate > 0 else 0
        self._groups: dict[Hashable, Hashable] = {}
        self.packed = [0, 0]  # entries pushed in the long form, in the lean one (distributed/entries_*)

    # -- clocks: the scheduler's monotonic seconds, Redis's wall-clock ms ------------
    def _ms(self, monotonic: float) -> int:
        return int((time.time() + (monotonic - self.clock())) * 1000)

    def _now_ms(self) -> int:
        return int(time.time() * 1000)

    def _part(self, key: Hashable) -> int:
        return partition_of(key, self.partitions)

    # -- TwoTierFrontier's interface ---------------------------------------------
    def push(self, key: Hashable, entry: dict, level: int = 0, again: bool = False) -> None:
        level = min(max(int(level), 0), self.levels - 1)
        ukey = key_of(entry["method"], entry["url"], entry["body"])
        packed = pack(entry, str(key))
        self.packed[packed[:1] == b"L"] += 1
        item = fp_bytes(fingerprint(ukey)) + packed
        bloom: list = []
        if self.seen is not None and not entry.get("dont_filter"):
            bloom = [self.seen.key, *self.seen.offsets(ukey)]
            self.seen.pending.add(ukey)
        self._pushes.append((self._part(key), str(key), level, item, bloom))
        if len(self._pushes) >= 500:
            self.flush()

    def flush(self) -> None:
        """Send buffered pushes in one pipeline (before anything that may complete their parent)."""
        if not self._pushes:
            return
        pushes, self._pushes = self._pushes, []
        now = self._now_ms()
        pipe = self.r.pipeline(transaction=False)
        for part, key, level, item, bloom in pushes:
            self._scripts["PUSH"](args=[self.prefix, part, key, level, item, now, self.worker, *bloom], client=pipe)
        pipe.execute()
        if self.seen is not None:
            for ukey in self.seen.pending:  # their bits are set now
                self.seen.remember(ukey)
            self.seen.pending.clear()
        if any(part in self.owned for part, *_ in pushes):
            self.wake()  # a new host of ours may be due at once

    def pop(self, now: float) -> tuple[Hashable, Any] | None:
        if not self._popped:
            self.flush()
            # The engine asks many times a second; Redis only when something may be due.
            parts = range(self.partitions) if self.shared else self.owned
            if not parts or now < self._quiet_until:
                return None
            out, next_due = self._scripts["POP"](args=[self.prefix, self._now_ms(), self.batch, self.worker,
                                                       self.lease_ms, self.levels, self.group_cap,
                                                       int(self.poll * 1000), self.group_gap_ms, *parts])
            for i in range(0, len(out), 3):
                key = out[i].decode()
                self._popped.append((key, unpack(out[i + 2], key)))
            self._next_due_ms = float(next_due) if next_due else None
            if len(out) < 3 * self.batch:  # everything due was taken: quiet until the next due key
                self._quiet_until = self.next_due() or now + self.poll
        if not self._popped:
            return None
        key, entry = self._popped.popleft()
        self.in_flight[key] = now
        return key, entry

    def release(self, key: Hashable, next_allowed: float) -> None:
        self.in_flight.pop(key, None)
        self.next_allowed[key] = next_allowed
        self._quiet_until = min(self._quiet_until, next_allowed)  # it may be due again then
        at_ms = self._ms(next_allowed)
        self._next_due_ms = at_ms if self._next_due_ms is None else min(self._next_due_ms, at_ms)
        self._scripts["RELEASE"](args=[self.prefix, str(key), self._part(key), self._ms(next_allowed),
                                       self._now_ms(), self.levels])
        if len(self.next_allowed) > 100_000:
            self.next_allowed.clear()

    def wake(self) -> None:
        """Ask Redis at the next pop (partitions changed, or new work was pushed here)."""
        self._quiet_until = 0.0

    def defer(self, key: Hashable, until: float) -> None:
        self.flush()  # a retry's push must be in Redis before it is deferred
        self._scripts["DEFER"](args=[self.prefix, str(key), self._part(key), self._ms(until), self._now_ms()])

    def set_group(self, key: Hashable, group: Hashable) -> None:
        """Put ``key`` in ``group`` (its server's address): with ``group_cap``, at most that many
        keys of a group are in flight, counted across all workers."""
        if self._groups.get(key) != group:
            self._groups[key] = group
            self.r.hset(f"{self.prefix}:group", str(key), str(group))

    def next_due(self) -> float | None:
        """When to look again: the earliest due key seen in our partitions, or a short poll
        (other workers push into our partitions without telling us)."""
        now = self.clock()
        if self._popped:
            return now
        due = now + self.poll
        if self._next_due_ms is not None:
            due = min(due, now + max(0.0, self._next_due_ms / 1000 - time.time()))
        return due

    def has_pending(self) -> bool:
        """Anything queued or unfinished anywhere: another worker's page may still add work here."""
        queued, in_flight = self.counts()
        return bool(self._popped or self._pushes or queued > 0 or in_flight > 0)

    def counts(self, max_age: float = 0.5) -> tuple[int, int]:
        """(entries queued, entries handed out and not yet stored), across all workers."""
        queued, in_flight, at = self._counts
        if self.clock() - at > max_age:
            raw = self.r.mget(f"{self.prefix}:queued", f"{self.prefix}:inflight")
            queued, in_flight = (int(x or 0) for x in raw)
            self._counts = (queued, in_flight, self.clock())
        return queued, in_flight

    def __len__(self) -> int:
        return self.counts()[0] + len(self._pushes)

    @property
    def front_len(self) -> int:
        return 0

    @property
    def back_len(self) -> int:
        return len(self)

    def key_state(self, key: Hashable, now: float) -> dict:
        """What this worker knows of ``key`` without asking Redis: whether it holds its lease."""
        return {"in_flight": key in self.in_flight}

    def due_keys(self, now: float) -> int:
        return len(self._popped)

    # -- distributed only ----------------------------------------------------------
    def complete(self, urls: Iterable[str]) -> int:
        """The store committed these URLs: forget them as pending (flushing their links first)."""
        self.flush()
        fps = [fp_bytes(fingerprint(u)) for u in urls]
        if not fps:
            return 0
        return int(self._scripts["COMPLETE"](args=[self.prefix, self.worker, *fps]))

    def heartbeat(self, partition_ttl: float) -> list[int]:
        """Renew this worker, take its share of partitions, and reap dead workers' work."""
        self.reap()
        now = self._now_ms()
        owned = self._scripts["HEARTBEAT"](args=[self.prefix, self.worker, now, self.worker_ttl_ms,
                                                 int(partition_ttl * 1000), self.partitions])
        owned = sorted(int(p) for p in owned)
        if owned != self.owned:
            self.wake()
        self.owned = owned
        return self.owned

    def reap(self, leaving: bool = False) -> tuple[int, int]:
        """Return dead workers' pending entries (this worker's, if ``leaving``) and expired leases."""
        back, expired = self._scripts["REAP"](args=[self.prefix, self._now_ms(), self.levels,
                                                    self.worker if leaving else "", self.partitions])
        if not leaving:
            self.returned += int(back)
            self.leases_expired += int(expired)
        return int(back), int(expired)

    def leave(self) -> None:
        """A clean exit: hand back partitions, leases and unfinished entries at once."""
        self.flush()
        for key in list(self.in_flight):
            self.release(key, self.next_allowed.get(key, self.clock()))
        self.reap(leaving=True)
        pipe = self.r.pipeline()
        for part in self.owned:
            pipe.eval("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
                      "return 0", 1, f"{self.prefix}:owner:{part}", self.worker)
        pipe.execute()
        self.owned = []
