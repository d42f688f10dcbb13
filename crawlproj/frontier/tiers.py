"""The two-tier Mercator frontier (pure logic: no Scrapy, no Twisted, no clock).

Front tier: ``levels`` FIFO queues, level 0 the most important. A refill takes
the head of a non-empty level chosen at random with weight ``bias ** -level``,
so high priority wins most of the time without starving the rest.

Back tier: one queue per politeness key (a host by default) for the
*active* keys only (FIFO within a priority level, lower levels first, so
priority holds inside a host even when the front tier drains quickly), a key -> queue table, and a heap of (next-allowed time,
key). Invariant: a key is in the heap (or, once due, in the ready lists)
exactly when it is active, not in flight, and its queue is non-empty. So
:meth:`pop` hands out only due keys, never two in-flight entries for one key,
and a key whose queue runs dry on release is deactivated (its next-allowed
time is remembered). Among the keys due at once (a crawl limited by its own
throughput has many), the one whose queue head has the best level goes first:
politeness decides when a key may go, priority decides which. A due key that is
given a better entry is filed again at that level.

Refill policy (Mercator keeps about 3 back queues per fetcher): the front tier
is pulled from until ``active_target`` keys are active, and beyond that (up
to ``max_active``) whenever no active key is due, because then the fetchers
would otherwise sit idle while inactive hosts wait in the front tier. URLs
pulled for an already active key join its back queue.

Queues are built by ``queue_factory`` so they can spill to disk
(:mod:`crawlproj.frontier.spill`); anything with ``append``, ``popleft`` and
``len`` works.
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, Protocol


class FIFO(Protocol):
    def append(self, item: Any) -> None: ...
    def popleft(self) -> Any: ...
    def __len__(self) -> int: ...


class LeveledQueue:
    """A back queue: FIFO within a priority level, lower levels first.

    Level FIFOs are made on demand, so a host with one level costs one FIFO.
    """

    __slots__ = ("levels", "factory", "name", "size")

    def __init__(self, factory: Callable[[str], FIFO], name: str) -> None:
        self.levels: dict[int, FIFO] = {}
        self.factory = factory
        self.name = name
        self.size = 0

    def append(self, item: tuple[int, Any]) -> None:
        level, entry = item
        queue = self.levels.get(level)
        if queue is None:
            queue = self.levels[level] = self.factory(f"{self.name}:{level}")
        queue.append(entry)
        self.size += 1

    def head_level(self) -> int:
        return min(self.levels)

    def popleft(self) -> Any:
        level = self.head_level()
        queue = self.levels[level]
        entry = queue.popleft()
        if not len(queue):
            del self.levels[level]
        self.size -= 1
        return entry

    def __len__(self) -> int:
        return self.size


class TwoTierFrontier:
    """Front tier by priority, back tier by politeness key, ready heap by next-allowed time
    (a :class:`~crawlproj.frontier.protocol.Frontier`).

    ``relevel(key, level, entry)`` gives an entry's level now; ``hold_level`` and
    ``hold_wait`` hold levels from ``hold_level`` on back while better entries are queued
    (see ``__init__``)."""

    reprioritises = True

    def __init__(
        self,
        levels: int = 8,
        active_target: int = 192,
        max_active: int = 1_000_000,
        bias: float = 2.0,
        queue_factory: Callable[[str], FIFO] = lambda name: deque(),
        rng: random.Random | None = None,
        relevel: Callable[[Hashable, int, Any], int] | None = None,
        hold_level: int | None = None,
        hold_wait: float = float("inf"),
        group_cap: int = 0,
        group_rate: float = 0.0,
        domain_cap: int = 0,
        domain_of: Callable[[Hashable], Hashable] | None = None,
        idle_keys: int = 0,
    ) -> None:
        if levels < 1:
            raise ValueError("levels must be >= 1")
        self.levels = levels
        self.active_target = active_target
        self.max_active = max(max_active, active_target)
        self.weights = [bias ** -level for level in range(levels)] if bias > 0 else [1.0] * levels
        self.queue_factory = queue_factory
        self.rng = rng or random.Random(0)
        self.front: list[FIFO] = [queue_factory(f"front{i}") for i in range(levels)]
        self.back: dict[Hashable, LeveledQueue] = {}
        self.heap: list[tuple[float, int, Hashable]] = []
        # Keys already due, by the level of their queue's head: among due keys the most
        # important head goes first (politeness decides when a key may go, priority which).
        self.ready: list[deque[tuple[float, Hashable]]] = [deque() for _ in range(levels)]
        # The list each ready key counts in, and since when it is due. A key whose queue gets a
        # better head while it waits there is filed again in the better list; the entry it
        # leaves behind is stale and skipped (else it would wait behind worse keys, and a
        # hold_level could keep it back for good).
        self._ready_level: dict[Hashable, tuple[int, float]] = {}
        self.in_flight: dict[Hashable, float] = {}
        self.next_allowed: dict[Hashable, float] = {}
        # Past this many keys' times, those of idle keys whose time has passed are forgotten
        # (they may go at once, as a key never seen): memory follows the hosts at work.
        self.idle_keys = idle_keys
        self._forget_at = idle_keys
        self.deferred: dict[Hashable, float] = {}  # key -> not before (retry back-off, parking)
        # Groups: a key's server (its IP, :meth:`set_group`) and its registered domain
        # (``domain_of(key)``). At most group_cap keys of one IP in flight at once, and at most
        # group_rate of them handed out a second; at most domain_cap keys of one domain in flight.
        # A due key a group blocks waits in that group's FIFO; one of them at a time (the group's
        # "woken" key) is back in the heap for the group's next slot, so a group of 50,000 due
        # keys costs O(log n) a pop, not O(n). Groups are ("ip", address) and ("domain", name).
        self.group_of: dict[Hashable, Hashable] = {}
        self.group_cap = group_cap  # 0: no group limit
        self.group_gap = 1.0 / group_rate if group_rate > 0 else 0.0  # 0: no rate limit
        self.domain_cap = domain_cap if domain_of is not None else 0  # 0: no domain limit
        self.domain_of = domain_of
        self.group_in_flight: dict[Hashable, int] = {}
        self.group_waiting: dict[Hashable, deque[tuple[float, Hashable]]] = {}
        self.group_next: dict[Hashable, float] = {}  # group -> when it may have its next key (group_rate)
        # key -> (group, its group_next before the key took a slot, the slot it set): given back
        # when the key's request never reached the network (release(..., refund=True)).
        self._rate_taken: dict[Hashable, tuple[Hashable, float, float]] = {}
        self._woken_at: dict[Hashable, float] = {}  # group -> when the key it woke was due by itself
        self._live: dict[Hashable, int] = {}  # key -> the sequence number of its one live heap entry
        self._group_woken: dict[Hashable, Hashable] = {}  # group -> its waiting key now in the heap
        self._flight_group: dict[Hashable, tuple] = {}  # key in flight -> the groups it counted in
        self._seq = 0
        self._front_len = 0
        self._back_len = 0
        # Promote on refill: relevel(key, level, entry) -> the entry's level now. An entry pulled
        # from the front tier whose level improved while it waited joins the better level's tail
        # instead of being handed on (at most max_promotions a pull, so a pull stays O(1)).
        self.relevel = relevel
        self.max_promotions = 8
        self.max_priority_pulls = 64
        # Levels from hold_level on go only when no better entry is queued (None: always), but
        # never wait longer than hold_wait seconds in a row: a better entry whose host is parked
        # or rests long must not stall the crawl.
        self.hold_level = hold_level
        self.hold_wait = hold_wait
        self.hold_expired = 0  # times the wait ran out
        self._held = False
        self._hold_since: float | None = None  # when the current wait began
        self._hold_out = False  # the current wait ran out
        self._back_levels = [0] * levels

    # -- sizes -----------------------------------------------------------
    def __len__(self) -> int:
        """Entries queued (front plus back), not counting those in flight."""
        return self._front_len + self._back_len

    @property
    def front_len(self) -> int:
        return self._front_len

    @property
    def back_len(self) -> int:
        return self._back_len

    def due_keys(self, now: float) -> int:
        return len(self._ready_level) + sum(1 for t, seq, key in self.heap if t <= now and self._live.get(key) == seq)

    def key_state(self, key: Hashable, now: float) -> dict:
        """What the back tier holds for ``key``: its queue (URLs of a key not yet active wait
        in the front tier, uncounted per key), whether it is in flight, seconds until it is due."""
        queue = self.back.get(key)
        due = max(self.next_allowed.get(key, now), self.deferred.get(key, now))
        return {"queued": len(queue) if queue is not None else 0, "in_flight": key in self.in_flight,
                "due_in": round(max(0.0, due - now), 3)}

    # -- entry points ----------------------------------------------------
    def push(self, key: Hashable, entry: Any, level: int = 0, again: bool = False) -> None:
        """Queue ``entry`` for politeness key ``key`` at priority ``level`` (0 is highest).
        ``again``: an entry handed out and sent back unfetched (its host's robots.txt came
        first, a retry): it keeps its key active, at the back queue, instead of queueing in the
        front tier behind every URL of hosts not yet visited."""
        level = min(max(int(level), 0), self.levels - 1)
        if key in self.back or again:  # an active key: straight to its back queue, where levels order it
            self._to_back(key, level, entry)
            return
        self.front[level].append((key, level, entry))
        self._front_len += 1

    def pop(self, now: float) -> tuple[Hashable, Any] | None:
        """The most important entry among the keys due at ``now``, marking its key in flight; else None."""
        self._refill(now)
        self._held = False
        for level, bucket in enumerate(self.ready):
            while self._ready_head(level):
                at, key = bucket[0]
                if self._waits(key, now):
                    self._held = True
                    return None
                bucket.popleft()
                del self._ready_level[key]
                later = self.deferred.pop(key, None)
                if later is not None and later > max(at, now):
                    self._schedule(key, later)  # deferred while it waited: not due after all
                    continue
                groups = self._groups(key)
                if groups and not self._take_groups(key, groups, at, now):
                    continue  # waits in a group's FIFO, back in its turn
                queue = self.back[key]
                self._back_levels[queue.head_level()] -= 1
                entry = queue.popleft()
                self._back_len -= 1
                self.in_flight[key] = now
                return key, entry
        return None

    def release(self, key: Hashable, next_allowed: float, refund: bool = False) -> None:
        """The in-flight entry of ``key`` finished; the key may go again at ``next_allowed``.
        ``refund``: its request never reached the network (robots.txt, scope, address safety
        refused it), so the slot it took of its server's rate is given back, when no later key
        of that server has taken one since."""
        if self.in_flight.pop(key, None) is None:
            raise KeyError(f"{key!r} is not in flight")
        next_allowed = max(next_allowed, self.deferred.pop(key, next_allowed))
        taken = self._rate_taken.pop(key, None)
        if refund and taken is not None:
            self._refund(*taken)
        for group in self._flight_group.pop(key, ()):
            self.group_in_flight[group] -= 1
            self._wake_group(group)
        self.next_allowed[key] = next_allowed
        queue = self.back.get(key)
        if queue is not None and len(queue):
            self._schedule(key, next_allowed)
        else:
            self.back.pop(key, None)
            self._live.pop(key, None)

    def _refund(self, group: Hashable, before: float, slot: float) -> None:
        """Give a rate slot back: the group's next slot is what it was before, and the key it woke
        for the slot that was taken, if it still waits in the heap, is due that much sooner."""
        if self.group_next.get(group) != slot:
            return  # another key of the server took the next slot since: it stands
        self.group_next[group] = before
        woken = self._group_woken.get(group)
        if woken is not None and woken not in self._ready_level and woken not in self.in_flight:
            self._schedule(woken, max(self._woken_at.get(group, before), before))

    def defer(self, key: Hashable, until: float) -> None:
        """Let ``key`` go no sooner than ``until`` (a retry back-off, a parked host)."""
        if until <= self.deferred.get(key, float("-inf")):
            return
        if key in self.in_flight or key in self.back:
            self.deferred[key] = until  # applied on release, or when its heap entry comes up
        else:
            self.next_allowed[key] = max(until, self.next_allowed.get(key, until))

    def set_group(self, key: Hashable, group: Hashable) -> None:
        """Put ``key`` in ``group`` (its server's IP) for the ``group_cap`` and ``group_rate`` limits."""
        self.group_of[key] = group

    def next_due(self) -> float | None:
        """When the earliest scheduled key becomes due (None when nothing is scheduled)."""
        if self._ready_level and not self._held:
            return min(self.ready[level][0][0] for level in range(self.levels) if self._ready_head(level))
        while self.heap and self._live.get(self.heap[0][2]) != self.heap[0][1]:
            heapq.heappop(self.heap)  # a superseded entry at the head
        due = self.heap[0][0] if self.heap else None
        if self._held and self._hold_since is not None and self.hold_wait != float("inf"):
            until = self._hold_since + self.hold_wait  # the held keys go then at the latest
            due = until if due is None else min(due, until)
        return due

    def has_pending(self) -> bool:
        return bool(self._front_len or self._back_len)

    # -- internals -------------------------------------------------------
    def _groups(self, key: Hashable) -> tuple:
        """The groups whose limits ``key`` counts in."""
        address = self.group_of.get(key)
        groups: tuple = (("ip", address),) if address is not None else ()
        if self.domain_cap:
            groups += (("domain", self.domain_of(key)),)  # type: ignore[misc]
        return groups

    def _cap(self, group: tuple) -> int:
        return self.group_cap if group[0] == "ip" else self.domain_cap

    def _take_groups(self, key: Hashable, groups: tuple, at: float, now: float) -> bool:
        """Count ``key`` in flight in each of its groups; or, when one of them blocks it, file it
        in that group's FIFO (False)."""
        for group in groups:
            if self._group_woken.get(group) == key:
                del self._group_woken[group]
        blocking = next((group for group in groups if self._group_blocked(group, now)), None)
        if blocking is not None:
            self.group_waiting.setdefault(blocking, deque()).append((at, key))
        else:
            for group in groups:
                self.group_in_flight[group] = self.group_in_flight.get(group, 0) + 1
                if self.group_gap and group[0] == "ip":
                    before = self.group_next.get(group, 0.0)
                    self.group_next[group] = now + self.group_gap
                    self._rate_taken[key] = (group, before, now + self.group_gap)
            self._flight_group[key] = groups
        for group in groups:
            self._wake_group(group)
        return blocking is None

    def _group_blocked(self, group: tuple, now: float) -> bool:
        """Whether ``group`` has its cap in flight, or had a key handed out less than a rate gap ago."""
        cap = self._cap(group)
        if cap and self.group_in_flight.get(group, 0) >= cap:
            return True
        return self.group_gap > 0 and self.group_next.get(group, 0.0) > now

    def _wake_group(self, group: Hashable) -> None:
        """Put the first key waiting on ``group`` back in the heap for the group's next slot,
        unless one is there already or the group's cap is in flight (a release wakes one then)."""
        waiting = self.group_waiting.get(group)
        if not waiting or group in self._group_woken:
            return
        cap = self._cap(group)
        if cap and self.group_in_flight.get(group, 0) >= cap:
            return
        at, key = waiting.popleft()
        if not waiting:
            del self.group_waiting[group]
        self._group_woken[group] = key
        self._woken_at[group] = at
        self._schedule(key, max(at, self.group_next.get(group, 0.0)))

    def _schedule(self, key: Hashable, at: float) -> None:
        """File ``key`` in the heap for ``at``; an entry it had there before is stale from now on
        (a refunded slot brings a woken key forward)."""
        self._seq += 1
        self._live[key] = self._seq
        heapq.heappush(self.heap, (at, self._seq, key))

    def _nothing_due(self, now: float) -> bool:
        while self.heap and self._live.get(self.heap[0][2]) != self.heap[0][1]:
            heapq.heappop(self.heap)
        return not self._ready_level and (not self.heap or self.heap[0][0] > now)

    def _forget_idle(self, now: float) -> None:
        """Drop the times of keys with nothing queued, nothing in flight, no deferral, that may
        go now anyway: the same answer as keeping them."""
        busy = (self.back, self.in_flight, self.deferred)
        for key in [k for k, t in self.next_allowed.items() if t <= now and not any(k in b for b in busy)]:
            del self.next_allowed[key]
        self._forget_at = max(self.idle_keys, len(self.next_allowed) + self.idle_keys // 2 + 1)

    def _refill(self, now: float) -> None:
        if self.idle_keys and len(self.next_allowed) > self._forget_at:
            self._forget_idle(now)
        while self._front_len and (
            len(self.back) < self.active_target or (self._nothing_due(now) and len(self.back) < self.max_active)
        ):
            self._to_back(*self._pull_front(), now=now)
        # Priority: while the front tier holds a better level than any due key's head (a URL
        # found important after the active hosts filled up), take it from there (bounded a pop).
        self._move_due(now)
        for _ in range(self.max_priority_pulls):
            if not self._front_len or len(self.back) >= self.max_active:
                break
            best_front = next(i for i, q in enumerate(self.front) if len(q))
            best_ready = next((i for i in range(self.levels) if self._ready_head(i)), self.levels)
            if best_front >= best_ready:
                break
            key, level, entry = self._pull_level(best_front)
            if self.relevel is not None:
                level = min(level, self.relevel(key, level, entry))
            self._to_back(key, level, entry, now=now)
            self._move_due(now)

    def _to_back(self, key: Hashable, level: int, entry: Any, now: float | None = None) -> None:
        queue = self.back.get(key)
        if queue is None:  # a newly active key
            queue = self.back[key] = LeveledQueue(self.queue_factory, f"back:{key}")
            if key not in self.in_flight:
                if now is not None and self.next_allowed.get(key, float("inf")) <= now:
                    # Due already, as :meth:`_forget_idle` would find it: its time goes, so the
                    # time it sat with nothing queued is not taken for the crawler's lag past it.
                    del self.next_allowed[key]
                self._schedule(key, self.next_allowed.get(key, 0.0))
        queue.append((level, entry))
        self._back_len += 1
        self._back_levels[level] += 1
        filed = self._ready_level.get(key)
        if filed is not None and level < filed[0]:  # due, and now with a better head: file it again
            self.ready[level].append((filed[1], key))
            self._ready_level[key] = (level, filed[1])

    def _ready_head(self, level: int) -> bool:
        """Whether ready list ``level`` holds a key, dropping the stale entries at its head."""
        bucket = self.ready[level]
        while bucket and self._ready_level.get(bucket[0][1], (None,))[0] != level:
            bucket.popleft()  # the key went, or was filed in a better list
        return bool(bucket)

    def _holds(self, key: Hashable) -> bool:
        """Whether ``key`` must wait although due: its head is at ``hold_level`` or worse while a
        better entry waits anywhere (a focused crawl fetches off-topic pages only when nothing on
        the topic is left to fetch, not whenever its hosts need rest)."""
        if self.hold_level is None or self.back[key].head_level() < self.hold_level:
            return False
        return any(self._back_levels[i] or len(self.front[i]) for i in range(self.hold_level))

    def _waits(self, key: Hashable, now: float) -> bool:
        """Whether due ``key`` must wait for better entries (see :meth:`_holds`), which it does
        for at most ``hold_wait`` seconds in a row."""
        if not self._holds(key):
            self._hold_since = None  # it goes (a better entry, or nothing better left): a later wait starts afresh
            return False
        if self._hold_since is None:
            self._hold_since, self._hold_out = now, False
        if now - self._hold_since < self.hold_wait:
            return True
        if not self._hold_out:  # each wait that runs out counts once
            self._hold_out = True
            self.hold_expired += 1
        return False

    def _move_due(self, now: float) -> None:
        """Keys whose time has come leave the heap for the ready list of their head's level."""
        while self.heap and self.heap[0][0] <= now:
            at, seq, key = heapq.heappop(self.heap)
            if self._live.get(key) != seq:
                continue  # superseded by a later filing of the key
            level = self.back[key].head_level()
            self.ready[level].append((at, key))
            self._ready_level[key] = (level, at)

    def _pull_front(self) -> tuple[Hashable, int, Any]:
        for _ in range(self.max_promotions):
            key, level, entry = self._pull_level()
            if self.relevel is None:
                return key, level, entry
            better = self.relevel(key, level, entry)
            if better >= level:
                return key, level, entry
            self.front[better].append((key, better, entry))
            self._front_len += 1
        return self._pull_level()

    def _pull_level(self, level: int | None = None) -> tuple[Hashable, int, Any]:
        """The head of front level ``level``, or of a random non-empty level biased to high priority."""
        if level is None:
            candidates = [i for i, q in enumerate(self.front) if len(q)]
            if len(candidates) == 1:
                level = candidates[0]
            else:
                level = self.rng.choices(candidates, weights=[self.weights[i] for i in candidates])[0]
        self._front_len -= 1
        return self.front[level].popleft()
