"""OPIC cash shared by every worker, in one Redis hash (``<REDIS_PREFIX>:opic``).

A link found by one worker may be fetched by another, so the cash a waiting URL
gathers must be where every worker can take it. Increments are buffered and sent
in one script call every ``flush_every`` seconds (and before any take); a take
reads and deletes the URL's cash in one script call, so a URL's cash is spent
once. Links to URLs no longer waiting add nothing (the script checks), so the
hash holds waiting URLs only, as the local table does.
"""

from __future__ import annotations

import time

import redis

from ..ordering.importance import Opic

# KEYS[1] the hash; ARGV: field, amount, new (1/0), ... New URLs are created; known ones
# gather cash only while they wait (their field exists).
ADD = """
for i = 1, #ARGV, 3 do
  if ARGV[i + 2] == '1' or redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then
    redis.call('HINCRBYFLOAT', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 0
"""
# KEYS[1] the hash; ARGV[1] the field: its cash, and the field is gone.
TAKE = """
local cash = redis.call('HGET', KEYS[1], ARGV[1])
if cash then redis.call('HDEL', KEYS[1], ARGV[1]) end
return cash
"""


class RedisOpic(Opic):
    """:class:`~crawlproj.ordering.importance.Opic` with its table in Redis."""

    def __init__(self, client: redis.Redis, key: str, flush_every: float = 0.2, seed_cash: float = 1.0) -> None:
        super().__init__(seed_cash)
        self.r, self.key, self.flush_every = client, key, flush_every
        self._add = client.register_script(ADD)
        self._take = client.register_script(TAKE)
        self._pending: dict[int, list] = {}  # fingerprint -> [amount, new]
        self._flushed = time.monotonic()

    def admit(self, key: int, host: str, meta: dict, new: bool) -> None:
        share = meta.get("opic_share")
        amount = (self.seed_cash if share is None else share) if new else (share or 0.0)
        if not amount and not new:
            return
        pending = self._pending.setdefault(key, [0.0, False])
        pending[0] += amount
        pending[1] = pending[1] or new
        if time.monotonic() - self._flushed >= self.flush_every or len(self._pending) >= 1000:
            self.flush()

    def flush(self) -> None:
        self._flushed = time.monotonic()
        if not self._pending:
            return
        args: list = []
        for key, (amount, new) in self._pending.items():
            args += [str(key), repr(amount), "1" if new else "0"]
        self._pending.clear()
        self._add(keys=[self.key], args=args)

    def take(self, key: int, host: str, meta: dict) -> None:
        self.flush()
        cash = self._take(keys=[self.key], args=[str(key)])
        meta["opic_cash"] = meta.get("opic_cash", 0.0) + (float(cash) if cash is not None else 0.0)

    def score(self, key: int, url: str, host: str, meta: dict) -> float:
        # A new URL's cash is what it was just given (not sent yet); a requeued one carries its own.
        pending = self._pending.get(key)
        return pending[0] if pending is not None else meta.get("opic_cash", 0.0)

    def state(self) -> object:
        return None  # Redis holds it (and persists it with its AOF)

    def restore(self, state: object) -> None:
        pass

    def __len__(self) -> int:
        return int(self.r.hlen(self.key))
