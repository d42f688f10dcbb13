"""The two-tier frontier's shared state in Redis (or a Redis Cluster), partitioned by host hash.

:class:`RedisFrontier` has the interface of :class:`~crawlproj.frontier.tiers.TwoTierFrontier`
(push, pop, release, defer, next_due), so :class:`~crawlproj.frontier.scheduler.FrontierScheduler`
keeps every politeness rule and only the state moves to Redis (layout in :mod:`.scripts`):

* per politeness key, one queue per priority level (the front tier's order, per host);
* per partition, a sorted set of keys by next-allowed time (the back tier's heap);
* a lease per key in flight: one request per host across all workers; a lease past its
  expiry, or held by a worker whose heartbeat stopped, is released by the partition's owner;
* per worker and partition, the entries it was handed and has not stored yet: if it dies
  they go back to the head of their queues, so nothing is lost.

A key's partition is ``crc32(key) % partitions``, and everything of a partition shares one
hash slot (:mod:`.keyspace`), so on a cluster each script call goes to one node and the
partitions spread over the masters. Workers lease partitions (:meth:`RedisFrontier.heartbeat`),
each holding its share as workers join and leave; a worker pops only from its own partitions,
and a URL found by any worker is pushed to its host's partition. Pushes are buffered and sent
in one call per partition; a pop asks, in one round trip per node, the partitions that may
have a due key. The per-IP limits (a server's keys in flight, its rate) live by server
address and are taken after the pop: a key they refuse goes back at once. Times in Redis are
wall-clock milliseconds.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Hashable, Iterable
from typing import Any

import redis

from ..frontier.journal import fingerprint
from ..frontier.urlseen import key_of
from . import scripts
from .connection import execute_pipeline, is_cluster, run_scripts
from .entries import pack, unpack
from .keyspace import LAYOUT, group_tag, meta_tag, partition_of, partition_tag

__all__ = ["RedisFrontier", "fp_bytes", "partition_of"]

#: The scripts a frontier runs, by name (:mod:`.scripts`).
SCRIPTS = ("PUSH", "POP", "UNPOP", "RELEASE", "DEFER", "COMPLETE", "HEARTBEAT", "REAP", "GROUP_TAKE",
           "GROUP_REFUND", "GROUP_DONE", "LEAVE")


def fp_bytes(fp: int) -> bytes:
    """A URL's fingerprint as the 8 bytes that head its queue item and name its pending record."""
    return fp.to_bytes(8, "little")


def check_layout(client: Any, prefix: str) -> None:
    """Mark ``prefix`` as holding this key layout; refuse a prefix holding an earlier one."""
    from ..errors import SettingsError

    key = f"{meta_tag(prefix)}:layout"
    if client.set(key, LAYOUT, nx=True):
        if client.exists(f"{prefix}:queued") or client.exists(f"{prefix}:ready:0"):
            client.delete(key)
            raise SettingsError("REDIS_PREFIX", prefix, "holds a frontier of an earlier crawlproj (another key "
                                "layout); finish it with that version, or use a new REDIS_PREFIX")
        return
    found = client.get(key)
    if found is not None and found.decode() != LAYOUT:
        raise SettingsError("REDIS_PREFIX", prefix, f"holds a frontier of key layout {found.decode()}; "
                            f"this crawlproj uses layout {LAYOUT}")


class RedisFrontier:
    """One worker's view of the shared frontier (see the module docstring), a
    :class:`~crawlproj.frontier.protocol.Frontier` that keeps each URL at the level it
    was pushed at."""

    reprioritises = False
    hold_expired = 0

    def __init__(self, client: redis.Redis, prefix: str, worker: str, partitions: int = 64, levels: int = 8,
                 batch: int = 16, lease_seconds: float = 120.0, worker_ttl: float = 15.0,
                 poll_seconds: float = 0.25, shared: bool = False, clock=time.monotonic, group_cap: int = 0,
                 group_rate: float = 0.0, lazy_release: bool = False) -> None:
        self.r = client
        self.prefix, self.worker, self.partitions, self.levels = prefix, worker, partitions, levels
        self.batch, self.lease_ms = batch, int(lease_seconds * 1000)
        self.worker_ttl_ms = int(worker_ttl * 1000)
        self.poll = poll_seconds
        # Shared: take due keys from every partition, not only the owned ones (a few workers on
        # one machine; the pop still leases each key to one worker at a time).
        self.shared = shared
        # Releases wait for the next round trip (the scheduler's next pop, or send()): a crawl asks
        # for its next request as soon as a fetch ends.
        self.lazy_release = lazy_release
        self.clock = clock
        self.owned: list[int] = []
        self.live: list[str] = [worker]  # the live workers, as of the last heartbeat (at live_at, ms)
        self.live_at = 0
        self.seen = None  # a RedisBloomDupeFilter: URLs are marked seen with their push
        self.returned = 0  # entries of dead workers this worker put back
        self.leases_expired = 0
        self.group_refusals = 0  # popped keys the per-IP limits sent back
        check_layout(client, prefix)
        self._scripts = {name: client.register_script(getattr(scripts, name)) for name in SCRIPTS}
        self._tags = [partition_tag(prefix, part) for part in range(partitions)]
        self._meta = meta_tag(prefix)
        self._pushes: dict[int, list] = {}  # partition -> PUSH's arguments, 7 per entry
        self._pushed = 0
        # Calls that need no answer (pushes, releases), sent ahead of the next call in its round
        # trip: each round trip blocks the reactor, for milliseconds when the cores are busy.
        self._carry: list[tuple[str, list, list]] = []
        self._carried_pushes: list[int] = []  # partitions whose pushes ride in _carry
        self._popped: deque[tuple[str, Any]] = deque()  # leased to this worker, not handed out yet
        # Wall-clock ms from which partition p may have a due key, as far as this worker knows
        # (0: ask); every partition is asked again at the poll (other workers push without telling).
        self._due: dict[int, float] = {}
        self._poll_at = 0.0  # monotonic
        self._pending_parts: dict[bytes, int] = {}  # fingerprint -> partition of what this worker holds
        self._counts = (0, 0, -1.0)  # queued, in flight, when read (monotonic)
        # What the scheduler reads of TwoTierFrontier:
        self.in_flight: dict[Hashable, float] = {}
        self.next_allowed: dict[Hashable, float] = {}
        self.back: dict = {}
        self.group_cap = group_cap
        self.group_gap_ms = round(1000.0 / group_rate) if group_rate > 0 else 0
        self._groups: dict[Hashable, str] = {}  # key -> its server's address, for its pushes
        self._flight_groups: dict[Hashable, str] = {}  # keys this worker holds -> the address counted
        self._rate_slots: dict[Hashable, int] = {}  # keys holding their server's rate slot -> its end (ms)
        self.packed = [0, 0]  # entries pushed in the long form, in the lean one (distributed/entries_*)

    # -- clocks: the scheduler's monotonic seconds, Redis's wall-clock ms ------------
    def _ms(self, monotonic: float) -> int:
        return int((time.time() + (monotonic - self.clock())) * 1000)

    def _monotonic(self, ms: float) -> float:
        """Wall-clock ``ms`` (Redis's) on the scheduler's monotonic clock."""
        return self.clock() + (ms / 1000 - time.time())

    def _now_ms(self) -> int:
        return int(time.time() * 1000)

    def _part(self, key: Hashable) -> int:
        return partition_of(key, self.partitions)

    def _ready(self, part: int) -> list[str]:
        """KEYS of a script on partition ``part``: its ready set, which routes the call."""
        return [f"{self._tags[part]}:ready"]

    def _run(self, calls: list[tuple[str, list, list]]) -> list:
        """Run script calls in one round trip, the carried ones (:meth:`flush`, :meth:`release`) first."""
        carried, self._carry = self._carry, []
        answers = run_scripts(self.r, [(self._scripts[name], keys, args) for name, keys, args in carried + calls])
        if self._carried_pushes:
            parts, self._carried_pushes = self._carried_pushes, []
            if self.seen is not None:
                for ukey in self.seen.pending:  # their bits are set now
                    self.seen.remember(ukey)
                self.seen.pending.clear()
            for part in parts:
                self._due[part] = 0  # a new host there may be due at once
        return answers[len(carried):]

    def send(self, pushes: bool = True) -> None:
        """Send what is carried (releases; buffered pushes too, with ``pushes``) now, if anything is."""
        if pushes:
            self._stage()
        if self._carry:
            self._run([])

    # -- TwoTierFrontier's interface ---------------------------------------------
    def push(self, key: Hashable, entry: dict, level: int = 0, again: bool = False) -> None:
        level = min(max(int(level), 0), self.levels - 1)
        ukey = key_of(entry["method"], entry["url"], entry["body"])
        packed = pack(entry, str(key))
        self.packed[packed[:1] == b"L"] += 1
        fp = fp_bytes(fingerprint(ukey))
        self._pending_parts.pop(fp, None)  # sent back, if this worker held it: no longer ours to complete
        bloom: tuple = ("", "", "")
        if self.seen is not None and not entry.get("dont_filter"):
            bloom = self.seen.locate(ukey, entry["url"])
            self.seen.pending.add(ukey)
        part = self._part(key)
        self._pushes.setdefault(part, []).extend((str(key), level, fp + packed, *bloom, self._groups.get(key, "")))
        self._pushed += 1
        if self._pushed >= 500:
            self.flush()

    def flush(self) -> None:
        """Send buffered pushes, one call per partition (before anything that may complete their parent)."""
        self.send()

    def _stage(self) -> None:
        """Buffered pushes, one call per partition, join the calls carried by the next round trip
        (ahead of anything that may complete their parent)."""
        if not self._pushes:
            return
        pushes, self._pushes, self._pushed = self._pushes, {}, 0
        now = self._now_ms()
        c0, err = (self.seen.first_capacity, self.seen.error_rate) if self.seen is not None else (0, 0)
        self._carry.extend(("PUSH", self._ready(part), [self._tags[part], now, self.worker, c0, err, *items])
                           for part, items in pushes.items())
        self._carried_pushes.extend(pushes)
        for part in pushes:
            self._due[part] = 0  # asked in the same round trip

    def _asked(self, now: float) -> list[int]:
        """The partitions to ask for due keys: all of ours at the poll, else those that may have one."""
        parts = range(self.partitions) if self.shared else self.owned
        if now >= self._poll_at:
            self._poll_at = now + self.poll
            return list(parts)
        now_ms = self._now_ms()
        return [part for part in parts if self._due.get(part, 0) <= now_ms]

    def pop(self, now: float) -> tuple[Hashable, Any] | None:
        if not self._popped:
            self._stage()  # pushes, releases and the pop: one round trip
            parts = self._asked(now)
            if parts:
                self._take(parts)
            elif self._carry:
                self._run([])
        if not self._popped:
            return None
        key, entry = self._popped.popleft()
        self.in_flight[key] = now
        return key, entry

    def _take(self, parts: list[int]) -> None:
        """Lease due keys of ``parts`` (up to ``batch`` in all), and pass them through the per-IP
        limits. One script call over all of them on one Redis. A cluster takes one call per
        partition, in rounds of at most ``batch - taken`` partitions (the likeliest first) until
        the batch is full or every partition was asked."""
        now_ms = self._now_ms()
        if is_cluster(self.r):
            order = sorted(parts, key=lambda part: self._due.get(part, 0))
            rounds = []
            while order and len(self._popped) + sum(map(len, rounds)) < self.batch:
                left = self.batch - len(self._popped) - sum(map(len, rounds))
                chunk, order = order[:left], order[left:]
                rounds.append(self._pop([[part] for part in chunk], max(1, left // len(chunk)), now_ms))
            taken = [t for r in rounds for t in r]
        else:
            taken = self._pop([parts], self.batch, now_ms)
        if (self.group_cap or self.group_gap_ms) and any(group for *_, group, _ in taken):
            taken = self._limit_groups(taken, now_ms)
        for part, key, fp, raw, group, due_ms in taken:
            self._pending_parts[fp] = part
            if group:
                self._flight_groups[key] = group
            if key in self.next_allowed:
                # When it was due, whichever worker released it last (the scheduler counts a late
                # hand-out; this worker's own last release may be long past). A key this worker
                # never released is left out, as a key's first request is.
                self.next_allowed[key] = self._monotonic(due_ms)
            self._popped.append((key, unpack(raw, key)))

    def _pop(self, groups: list[list[int]], most: int, now_ms: int) -> list[tuple]:
        """One POP call per group of partitions, up to ``most`` keys each: (partition, key, fp,
        entry, group, due ms) leased, and each asked partition's next due time noted."""
        answers = self._run([("POP", self._ready(group[0]), [now_ms, most, self.worker, self.lease_ms, self.levels,
                                                             *(self._tags[p] for p in group)]) for group in groups])
        taken = []
        for group, (out, dues) in zip(groups, answers):
            for part, due in zip(group, dues):
                if due != b"":  # looked at: when the next key there is due (none waiting: inf)
                    self._due[part] = float(due) if due is not None else math.inf
            for i in range(0, len(out), 6):
                taken.append((group[int(out[i + 5])], out[i].decode(), out[i + 1], out[i + 2], out[i + 3].decode(),
                              float(out[i + 4])))
            if len(out) >= 6 * most:  # full: more may be due where it stopped
                self._due[group[int(out[-1])]] = 0
        return taken

    def _limit_groups(self, taken: list, now_ms: int) -> list:
        """The popped keys their server's per-IP limits let go; the others go back at once."""
        grouped = [t for t in taken if t[4]]
        answers = self._run([("GROUP_TAKE", [f"{group_tag(self.prefix, group)}:flight"],
                              [group_tag(self.prefix, group), key, now_ms, self.lease_ms, self.group_cap,
                               self.group_gap_ms, int(self.poll * 1000)]) for _, key, _, _, group, _ in grouped])
        refused: dict[int, list] = {}
        for (part, key, fp, *_), later in zip(grouped, answers):
            if int(later):
                refused.setdefault(part, []).extend((fp, int(later)))
                self._due[part] = min(self._due.get(part, math.inf), int(later))
            elif self.group_gap_ms:
                self._rate_slots[key] = now_ms + self.group_gap_ms
        if refused:
            self.group_refusals += sum(len(v) // 2 for v in refused.values())
            self._run([("UNPOP", self._ready(part), [self._tags[part], self.worker, self.levels, *pairs])
                       for part, pairs in refused.items()])
            back = {fp for pairs in refused.values() for fp in pairs[::2]}
            taken = [t for t in taken if t[2] not in back]
        return taken

    def release(self, key: Hashable, next_allowed: float, refund: bool = False) -> None:
        """``refund``: the request never reached the network, and its server's rate slot (in
        Redis, shared by the workers) is given back unless another key has taken a later one."""
        self.in_flight.pop(key, None)
        self.next_allowed[key] = next_allowed
        part, at_ms = self._part(key), self._ms(next_allowed)
        self._due[part] = min(self._due.get(part, math.inf), at_ms)  # it may be due again then
        calls = [("RELEASE", self._ready(part), [self._tags[part], str(key), at_ms, self._now_ms(), self.levels])]
        group, slot = self._flight_groups.pop(key, None), self._rate_slots.pop(key, None)
        if group and self.group_cap:
            calls.append(("GROUP_DONE", [f"{group_tag(self.prefix, group)}:flight"], [str(key)]))
        if group and refund and slot is not None:
            calls.append(("GROUP_REFUND", [f"{group_tag(self.prefix, group)}:flight"], [group_tag(self.prefix, group), slot]))
        if self.lazy_release:
            # With the next call: the engine asks for the next request as soon as a fetch ends.
            self._carry.extend(calls)
        else:
            self._run(calls)
        if len(self.next_allowed) > 100_000:
            self.next_allowed.clear()

    def wake(self) -> None:
        """Ask Redis at the next pop (partitions changed, or new work was pushed here)."""
        self._poll_at = 0.0

    def defer(self, key: Hashable, until: float) -> None:
        self._stage()  # a retry's push must be in Redis before it is deferred
        part = self._part(key)
        self._run([("DEFER", self._ready(part), [self._tags[part], str(key), self._ms(until), self._now_ms()])])

    def set_group(self, key: Hashable, group: Hashable) -> None:
        """Put ``key`` in ``group`` (its server's address), sent with its next push: with
        ``group_cap``, at most that many keys of a group are in flight, counted across all workers."""
        if len(self._groups) > 100_000:
            self._groups.clear()  # Redis keeps each key's group; a later push need not repeat it
        self._groups[key] = str(group)

    def next_due(self) -> float | None:
        """When to look again: the earliest due key known in our partitions, or the poll
        (other workers push into our partitions without telling us)."""
        now = self.clock()
        if self._popped:
            return now
        due = max(self._poll_at, now)
        parts = range(self.partitions) if self.shared else self.owned
        earliest = min((self._due.get(part, 0) for part in parts), default=math.inf)
        if earliest < math.inf:
            due = min(due, max(now, self._monotonic(earliest)))
        return due

    def has_pending(self) -> bool:
        """Anything queued or unfinished anywhere: another worker's page may still add work here."""
        queued, in_flight = self.counts()
        return bool(self._popped or self._pushes or self._carry or queued > 0 or in_flight > 0)

    def counts(self, max_age: float = 0.5) -> tuple[int, int]:
        """(entries queued, entries handed out and not yet stored), across all workers."""
        queued, in_flight, at = self._counts
        if self.clock() - at > max_age:
            raw = [int(x or 0) for x in execute_pipeline(self.r, lambda pipe: [
                (pipe.get(f"{tag}:queued"), pipe.get(f"{tag}:inflight")) for tag in self._tags])]
            queued, in_flight = max(0, sum(raw[0::2])), max(0, sum(raw[1::2]))
            self._counts = (queued, in_flight, self.clock())
        return queued, in_flight

    def __len__(self) -> int:
        return self.counts()[0] + self._pushed

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
        self._stage()
        by_part: dict[int, list[bytes]] = {}
        for url in urls:
            fp = fp_bytes(fingerprint(url))
            part = self._pending_parts.pop(fp, None)
            if part is not None:
                by_part.setdefault(part, []).append(fp)
        answers = self._run([("COMPLETE", self._ready(part), [self._tags[part], self.worker, *fps])
                             for part, fps in by_part.items()])
        return sum(int(n) for n in answers)

    def heartbeat(self, partition_ttl: float) -> list[int]:
        """Renew this worker, take its share of partitions, and reap dead workers' work there."""
        now = self._now_ms()
        owned, live = self._run([("HEARTBEAT", [f"{self._meta}:workers"],
                                  [self._meta, self.worker, now, self.worker_ttl_ms,
                                   int(partition_ttl * 1000), self.partitions])])[0]
        self.live, self.live_at = [w.decode() for w in live], now
        owned = sorted(int(p) for p in owned)
        if owned != self.owned:
            self.wake()
        self.owned = owned
        self.reap()
        return self.owned

    def reap(self, leaving: bool = False) -> tuple[int, int]:
        """Return dead workers' pending entries and expired leases in our partitions (this
        worker's own everywhere, if ``leaving``)."""
        parts = range(self.partitions) if leaving else self.owned
        live = [w for w in self.live if not (leaving and w == self.worker)]
        now = self._now_ms()
        answers = self._run([("REAP", self._ready(part), [self._tags[part], now, self.levels, self.live_at,
                                                          self.worker if leaving else "", *live]) for part in parts])
        back = sum(int(a[0]) for a in answers)
        expired = sum(int(a[1]) for a in answers)
        freed = [(key.decode(), group.decode()) for a in answers for key, group in zip(a[2][0::2], a[2][1::2])]
        if self.group_cap and any(group for _, group in freed):
            self._run([("GROUP_DONE", [f"{group_tag(self.prefix, group)}:flight"], [key])
                       for key, group in freed if group])
        if not leaving:
            self.returned += back
            self.leases_expired += expired
            for part in parts:
                self._due[part] = 0 if back or expired else self._due.get(part, 0)
        return back, expired

    def leave(self) -> None:
        """A clean exit: hand back partitions, leases and unfinished entries at once."""
        self.flush()
        for key in list(self.in_flight):
            self.release(key, self.next_allowed.get(key, self.clock()))
        self.reap(leaving=True)
        self._run([("LEAVE", [f"{self._meta}:workers"], [self._meta, self.worker, *self.owned])])
        self.owned = []
