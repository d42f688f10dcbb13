"""Importance state shared by every worker: OPIC cash, backlinks and site sizes in Redis.

A link found by one worker may be fetched by another, so what a waiting URL (or a
site) gathers must be where every worker can read and take it. Each component keeps
its table in :data:`~.keyspace.HASH_SHARDS` hashes by field (``<REDIS_PREFIX>:opic:<shard>``,
``:backlinks:<shard>``, ``:larger_sites:<shard>``), spread over a cluster's masters, and
Redis's persistence is its journal, as it is the frontier's.

Increments are buffered and sent every ``flush_every`` seconds (and before any take), one
script call per shard in one round trip per node; a take reads and deletes a field in one script call, so
OPIC cash is spent once. Increments to fields that no longer exist add nothing
unless they create them (the script checks), so a hash holds waiting URLs only, as
the local table does. A score reads no Redis: it is the value last seen (the
flush returns each field's new value) plus what is not sent yet.
"""

from __future__ import annotations

import time

import redis

from ..ordering.importance import Backlinks, LargerSites, Opic, Tracked
from .connection import execute_pipeline, run_scripts
from .keyspace import HASH_SHARDS, shard_of

# KEYS[1] the hash; ARGV: field, amount, create (1/0), ... Returns each field's new value
# (false when it does not exist). A decrement to 0 or below removes the field.
ADD = """
local out = {}
for i = 1, #ARGV, 3 do
  local value = false
  if ARGV[i + 2] == '1' or redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then
    value = redis.call('HINCRBYFLOAT', KEYS[1], ARGV[i], ARGV[i + 1])
    if tonumber(ARGV[i + 1]) < 0 and tonumber(value) <= 0 then
      redis.call('HDEL', KEYS[1], ARGV[i])
      value = false
    end
  end
  out[#out + 1] = value
end
return out
"""
# KEYS[1] the hash; ARGV[1] the field: its value, and the field is gone.
TAKE = """
local value = redis.call('HGET', KEYS[1], ARGV[1])
if value then redis.call('HDEL', KEYS[1], ARGV[1]) end
return value
"""


class SharedTable(Tracked):
    """The storage of a :class:`~crawlproj.ordering.importance.Tracked` component in a Redis
    hash; mixed in before the component (``class RedisOpic(SharedTable, Opic)``)."""

    #: Values last seen, kept for at most this many fields (then forgotten: a score falls
    #: back on what the request carries).
    max_known = 100_000

    def __init__(self, client: redis.Redis, key: str, flush_every: float = 0.2, **kwargs) -> None:
        super().__init__(**kwargs)
        self.r, self.key, self.flush_every = client, key, flush_every
        self._add = client.register_script(ADD)
        self._take = client.register_script(TAKE)
        self._pending: dict[object, list] = {}  # field -> [amount, create]
        self._known: dict[object, float] = {}
        self._flushed = time.monotonic()
        self._len = (0, float("-inf"))  # fields, when counted (monotonic)

    def _hash(self, field: str) -> str:
        return f"{self.key}:{shard_of(field)}"

    def add(self, field: object, amount: float, create: bool) -> None:
        pending = self._pending.get(field)
        if pending is not None and (amount < 0) != (pending[0] < 0):
            # An increment and a decrement do not merge: +1 then -1 would send a net 0 that
            # creates the field, where the local table creates it and then removes it.
            self.flush()
        pending = self._pending.setdefault(field, [0.0, False])
        pending[0] += amount
        pending[1] = pending[1] or create
        if time.monotonic() - self._flushed >= self.flush_every or len(self._pending) >= 1000:
            self.flush()

    def flush(self) -> None:
        self._flushed = time.monotonic()
        if not self._pending:
            return
        shards: dict[str, tuple[list, list]] = {}
        for field, (amount, create) in self._pending.items():
            fields, args = shards.setdefault(self._hash(str(field)), ([], []))
            fields.append(field)
            args += [str(field), repr(amount), "1" if create else "0"]
        self._pending.clear()
        if len(self._known) > self.max_known:
            self._known.clear()
        answers = run_scripts(self.r, [(self._add, [shard], args) for shard, (_, args) in shards.items()])
        for (fields, _), values in zip(shards.values(), answers):
            for field, value in zip(fields, values):
                if value is None:
                    self._known.pop(field, None)
                else:
                    self._known[field] = float(value)

    def pop(self, field: object, default: float) -> float:
        self.flush()
        self._known.pop(field, None)
        value = self._take(keys=[self._hash(str(field))], args=[str(field)])
        return float(value) if value is not None else default

    def value(self, field: object, default: float) -> float:
        known, pending = self._known.get(field), self._pending.get(field)
        if known is None and pending is None:
            return default
        return (known or 0.0) + (pending[0] if pending is not None else 0.0)

    def state(self) -> object:
        return None  # Redis holds it (and persists it with its AOF)

    def restore(self, state: object) -> None:
        pass

    def __len__(self) -> int:
        """Fields held (every shard counted, at most every 10 s)."""
        count, at = self._len
        if time.monotonic() - at > 10:
            count = sum(execute_pipeline(self.r, lambda pipe: [pipe.hlen(f"{self.key}:{shard}")
                                                               for shard in range(HASH_SHARDS)]))
            self._len = (count, time.monotonic())
        return count

    def recount(self) -> None:
        """The next ``len`` counts the shards again (a crawl's closing figure must be exact)."""
        self._len = (0, float("-inf"))


class RedisOpic(SharedTable, Opic):
    """:class:`~crawlproj.ordering.importance.Opic` with its cash in Redis."""


class RedisBacklinks(SharedTable, Backlinks):
    """:class:`~crawlproj.ordering.importance.Backlinks` with its in-link counts in Redis."""


class RedisLargerSites(SharedTable, LargerSites):
    """:class:`~crawlproj.ordering.importance.LargerSites` with its site counts in Redis."""


#: The components whose state the distributed scheduler keeps in Redis, by name.
SHARED = {cls.name: cls for cls in (RedisOpic, RedisBacklinks, RedisLargerSites)}
