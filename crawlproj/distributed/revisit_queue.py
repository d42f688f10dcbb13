"""The long-term revisit queue in Redis, partitioned by host hash like the frontier.

Same interface as :class:`~crawlproj.revisit.queue.RevisitQueue` (the SQLite one), so the
revisit pipeline and the refresher work unchanged. A URL is known by its id (5 bytes of its
hash, :func:`~.keyspace.page_id`); per partition ``part`` of its host
(:func:`~.keyspace.partition_of`, the frontier's partitions):

* ``P:rv:s:<part>:<n>``         small hashes, id -> the packed state with its URL
                                (:mod:`crawlproj.revisit.packing`, about 110 bytes)
* ``{P:rv:<part>}:due:<slot>``  the ids due in one slot of time (sized from the capacity, so
                                that a slot holds about 64), a set of integers (Redis's intset:
                                8 bytes an id, up to 512 a set)
* ``{P:rv:<part>}:slots``       the partition's slots that hold ids (a sorted set by time)
* ``P:rv:n:<part>``             the partition's URLs

and per host ``P:rv:h:<host>`` (its ids, for the load index and overload relief; an intset
too, up to 512 URLs a host). About 140 bytes a URL, where JSON rows in one hash, a due-date
sorted set and host sets of URLs took 830. A slot's set and the partition's slot index
share a hash tag, so the one-key-slot scripts that keep them in step run on a cluster.
A worker's refresher reads only the partitions its frontier holds (``owned``), so each URL
is revisited by one worker, whichever stored it last. Writes are buffered and sent on commit.
"""

from __future__ import annotations

import math
import random

from ..revisit.packing import pack, unpack
from ..revisit.queue import BufferedWrites
from ..revisit.state import UrlState
from ..urls import host_of
from .connection import execute_pipeline, run_scripts
from .keyspace import bucket_count, page_id, partition_of, stored_capacity

#: The due times a crawl's states spread over (a month), and the ids a slot's set holds when
#: the crawl is at its SHARED_STATE_CAPACITY: a slot is that month's share, at least a minute.
DUE_SPAN, SLOT_IDS, MIN_SLOT = 2_592_000, 64, 60

# A slot's set takes an id, and the slot joins the partition's index.
_ENTER = """
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[2])
return 1
"""
# A slot's set gives up an id; an emptied slot leaves the index.
_LEAVE = """
redis.call('SREM', KEYS[1], ARGV[1])
if redis.call('SCARD', KEYS[1]) == 0 then redis.call('ZREM', KEYS[2], ARGV[2]) end
return 1
"""


def _int_id(url: str) -> int:
    return int.from_bytes(page_id(url), "big")


class RedisRevisitQueue(BufferedWrites):
    """Reader and buffered writer of the revisit state in Redis (see the module docstring)."""

    #: The replan draws its samples in a thread: they only read Redis, and redis-py's clients
    #: are safe to share between threads.
    samples_off_thread = True
    #: A read waits on the network: the pipeline makes it off the reactor's thread (:meth:`stored`).
    remote = True

    @classmethod
    def from_settings(cls, settings) -> RedisRevisitQueue:  # noqa: ANN001 - Scrapy Settings
        from . import connection

        return cls(connection.from_settings(settings), settings.get("REDIS_PREFIX"),
                   settings.getint("FRONTIER_PARTITIONS"), settings.getint("SHARED_STATE_CAPACITY"))

    def __init__(self, client, prefix: str, partitions: int, capacity: int = 10_000_000) -> None:
        self.r, self.p, self.partitions = client, f"{prefix}:rv", partitions
        self.path = f"{self.p}:* in Redis"  # where it lives, for the log
        self.owned: list[int] | None = None  # the refresher's partitions; None: all
        self.capacity = stored_capacity(client, f"{self.p}:capacity", capacity)
        self.buckets = max(1, bucket_count(self.capacity) // partitions)  # per partition
        self.slot_seconds = max(MIN_SLOT, DUE_SPAN * SLOT_IDS * partitions // self.capacity)
        self.enter, self.leave = client.register_script(_ENTER), client.register_script(_LEAVE)
        super().__init__()

    # -- where things are ---------------------------------------------------
    def _part(self, host: str) -> int:
        return partition_of(host, self.partitions)

    def _parts(self) -> list[int]:
        return list(range(self.partitions)) if self.owned is None else self.owned

    def _state_key(self, part: int, uid: int) -> str:
        return f"{self.p}:s:{part}:{uid % self.buckets}"

    def _tag(self, part: int) -> str:
        return f"{{{self.p}:{part}}}"

    def _slot_keys(self, part: int, slot: int) -> list[str]:
        return [f"{self._tag(part)}:due:{slot}", f"{self._tag(part)}:slots"]

    def _slot(self, due: float) -> int:
        return math.floor(due / self.slot_seconds) if math.isfinite(due) else (1 << 40 if due > 0 else -(1 << 40))

    def _where(self, url: str, host: str) -> tuple[int, int, str]:
        part, uid = self._part(host), _int_id(url)
        return part, uid, self._state_key(part, uid)

    # -- writing ----------------------------------------------------------
    def commit(self) -> None:
        if not self.pending:
            return
        puts, deletes = self._take()
        try:
            self._write(puts, deletes)
        except BaseException:
            self._restore(puts, deletes)
            raise

    def _write(self, puts: dict[str, UrlState], deletes: dict[str, str]) -> None:
        urls = [(url, state.host) for url, state in puts.items()] + [(url, host or host_of(url))
                                                                     for url, host in deletes.items()]
        where = [self._where(url, host) for url, host in urls]
        # What each URL was (its old due slot, whether it is new): one round trip.
        old = execute_pipeline(self.r, lambda pipe: [pipe.hget(key, uid.to_bytes(5, "big"))
                                                     for _, uid, key in where])
        calls, counts = [], {}
        for (url, host), (part, uid, key), raw in zip(urls, where, old):
            before = unpack(raw) if raw else None
            after = puts.get(url)
            old_slot = self._slot(before.next_due) if before else None
            new_slot = self._slot(after.next_due) if after else None
            if old_slot is not None and old_slot != new_slot:
                calls.append((self.leave, self._slot_keys(part, old_slot), [uid, old_slot]))
            if new_slot is not None and new_slot != old_slot:
                calls.append((self.enter, self._slot_keys(part, new_slot), [uid, new_slot]))
            counts[part] = counts.get(part, 0) + (after is not None) - (before is not None)

        def fill(pipe) -> None:  # noqa: ANN001
            for (url, host), (part, uid, key), raw in zip(urls, where, old):
                field = uid.to_bytes(5, "big")
                if url in puts:
                    pipe.hset(key, field, pack(puts[url]))
                    if not raw:
                        pipe.sadd(f"{self.p}:h:{host}", uid)
                elif raw:
                    pipe.hdel(key, field)
                    pipe.srem(f"{self.p}:h:{host}", uid)
            for part, n in counts.items():
                if n:
                    pipe.incrby(f"{self.p}:n:{part}", n)
            pipe.incr(f"{self.p}:seq")

        # The states first: a refresher meeting an id in a slot before its state skips it.
        execute_pipeline(self.r, fill)
        run_scripts(self.r, calls)

    def close(self) -> None:
        self.commit()

    # -- reading ----------------------------------------------------------
    def get(self, url: str) -> UrlState | None:
        held, state = self.buffered(url)
        return state if held else self.stored(url)

    def stored(self, url: str) -> UrlState | None:
        """The URL's committed state: a round trip (safe on another thread, as the samples are)."""
        part, uid, key = self._where(url, host_of(url))
        raw = self.r.hget(key, uid.to_bytes(5, "big"))
        return unpack(raw) if raw else None

    def due(self, after: float, until: float, limit: int) -> list[tuple[float, str]]:
        """(next_due, url) due in ``[after, until]`` in the owned partitions, earliest first."""
        rows: list[tuple[float, str]] = []
        low, high = self._slot(after), self._slot(until)
        for part in self._parts():
            mine = 0
            for slot in (int(s) for s in self.r.zrangebyscore(self._slot_keys(part, 0)[1], low, high)):
                if mine >= limit:
                    break  # this partition's earlier slots gave enough
                ids = [int(i) for i in self.r.smembers(self._slot_keys(part, slot)[0])]
                raws = execute_pipeline(self.r, lambda pipe, ids=ids, part=part: [
                    pipe.hget(self._state_key(part, uid), uid.to_bytes(5, "big")) for uid in ids])
                found = [(s.next_due, s.url) for s in map(unpack, filter(None, raws)) if after <= s.next_due <= until]
                rows.extend(found)
                mine += len(found)
        return sorted(rows)[:limit]

    def changed_since(self, seq: int, until: float) -> list[tuple[float, str]]:
        """Every owned row due by ``until``: without a change log the refresher reads them again
        (its heap drops the ones it holds already)."""
        return self.due(float("-inf"), until, 1 << 30) if seq < self.committed_seq() else []

    def committed_seq(self) -> int:
        """Commits so far, by any worker (any of them may reschedule our rows)."""
        return int(self.r.get(f"{self.p}:seq") or 0)

    def host_loads(self):
        return iter(())  # the pipeline rebuilds loads as it visits (a scan of every host is too costly)

    def host_states(self, host: str) -> list[UrlState]:
        part = self._part(host)
        ids = [int(i) for i in self.r.smembers(f"{self.p}:h:{host}")]
        raws = execute_pipeline(self.r, lambda pipe: [pipe.hget(self._state_key(part, uid), uid.to_bytes(5, "big"))
                                                      for uid in ids]) if ids else []
        states = {s.url: s for s in map(unpack, filter(None, raws))}
        for url in self._deletes:
            states.pop(url, None)
        states.update((u, s) for u, s in self._puts.items() if s.host == host)
        return list(states.values())

    def _sample(self, n: int, total: int | None = None) -> list[bytes]:
        """Up to about ``n`` packed states drawn at random over the partitions' buckets
        (``total``: the states held, when the caller has counted them)."""
        total = self.count() if total is None else total
        if total <= n:  # all of them: random buckets of a table laid out for its capacity are mostly empty
            raws = [raw for key in self.r.scan_iter(match=f"{self.p}:s:*", count=1000) for raw in self.r.hvals(key)]
            random.shuffle(raws)
            return raws[:n]
        per_draw = min(8.0, max(total / (self.partitions * self.buckets), 0.125))  # states a draw finds
        draws = [(part, random.randrange(self.buckets)) for part in range(self.partitions)
                 for _ in range(min(self.buckets, max(1, math.ceil(n / (self.partitions * per_draw)))))]
        found = execute_pipeline(self.r, lambda pipe: [pipe.hrandfield(f"{self.p}:s:{part}:{b}", 8, withvalues=True)
                                                       for part, b in draws])
        raws = [raw for pairs in found for raw in pairs[1::2]]
        random.shuffle(raws)
        return raws[:n]

    def state_sample(self, n: int) -> list[UrlState]:
        """Up to ``n`` states drawn at random over the partitions."""
        return [unpack(raw) for raw in self._sample(n)]

    def rate_sample(self, n: int) -> tuple[list[float], int]:
        total = self.count()
        if not total:
            return [], 0
        states = [unpack(raw) for raw in self._sample(n, total)]
        rates = [s.rate for s in states if s.rate is not None]
        # (sampled rates, estimated rows with a rate): the pipeline scales its budget by the ratio
        return rates, round(total * len(rates) / max(1, len(states)))

    def count(self) -> int:
        return sum(int(n or 0) for n in execute_pipeline(self.r, lambda pipe: [
            pipe.get(f"{self.p}:n:{part}") for part in range(self.partitions)]))
