"""The long-term revisit queue in Redis, partitioned by host hash like the frontier.

Same interface as :class:`~crawlproj.revisit.queue.RevisitQueue` (the SQLite one), so the
revisit pipeline and the refresher work unchanged. Per partition ``part`` of the host
(:func:`~.frontier.partition_of`, the frontier's partitions):

* ``P:rv:s:<part>``   hash url -> the packed state (the SQLite row as JSON)
* ``P:rv:due:<part>`` sorted set url -> next due (crawl-clock seconds): the due-date index

and per host ``P:rv:h:<host>`` (its URLs, for the load index and overload relief). A
worker's refresher reads only the partitions its frontier holds (``owned``), so each URL
is revisited by one worker, whichever stored it last. Writes are buffered and sent in
one MULTI on commit (one pipeline on a cluster: rewriting a URL's state twice is harmless).
"""

from __future__ import annotations

import json

from ..revisit.queue import COLUMNS, BufferedWrites, row_state, state_row
from ..revisit.state import UrlState
from ..urls import host_of
from .connection import execute_pipeline, is_cluster
from .keyspace import partition_of


class RedisRevisitQueue(BufferedWrites):
    """Reader and buffered writer of the revisit state in Redis (see the module docstring)."""

    @classmethod
    def from_settings(cls, settings) -> RedisRevisitQueue:  # noqa: ANN001 - Scrapy Settings
        from . import connection

        return cls(connection.from_settings(settings), settings.get("REDIS_PREFIX"), settings.getint("FRONTIER_PARTITIONS"))

    def __init__(self, client, prefix: str, partitions: int) -> None:
        self.r, self.p, self.partitions = client, f"{prefix}:rv", partitions
        self.path = f"{self.p}:* in Redis"  # where it lives, for the log
        self.owned: list[int] | None = None  # the refresher's partitions; None: all
        super().__init__()

    def _part(self, host: str) -> int:
        return partition_of(host, self.partitions)

    def _parts(self) -> list[int]:
        return list(range(self.partitions)) if self.owned is None else self.owned

    # -- writing ----------------------------------------------------------
    def commit(self) -> None:
        if not self.pending:
            return
        puts, deletes = self._take()

        def fill(pipe) -> None:  # noqa: ANN001
            for url, state in puts.items():
                part = self._part(state.host)
                pipe.hset(f"{self.p}:s:{part}", url, json.dumps(state_row(state, 0)[:-1]))
                pipe.zadd(f"{self.p}:due:{part}", {url: state.next_due})
                pipe.sadd(f"{self.p}:h:{state.host}", url)
            for url, host in deletes.items():
                part = self._part(host)
                pipe.hdel(f"{self.p}:s:{part}", url)
                pipe.zrem(f"{self.p}:due:{part}", url)
                pipe.srem(f"{self.p}:h:{host}", url)
            pipe.incr(f"{self.p}:seq")

        try:
            execute_pipeline(self.r, fill, transaction=not is_cluster(self.r))  # a cluster's keys span slots
        except BaseException:
            self._restore(puts, deletes)
            raise

    def close(self) -> None:
        self.commit()

    # -- reading ----------------------------------------------------------
    def get(self, url: str) -> UrlState | None:
        if url in self._puts:
            return self._puts[url]
        if url in self._deletes:
            return None
        raw = self.r.hget(f"{self.p}:s:{self._part(host_of(url))}", url)
        return row_state(tuple(json.loads(raw))) if raw else None

    def due(self, after: float, until: float, limit: int) -> list[tuple[float, str]]:
        """(next_due, url) due in ``[after, until]`` in the owned partitions, earliest first."""
        rows: list[tuple[float, str]] = []
        for part in self._parts():
            found = self.r.zrangebyscore(f"{self.p}:due:{part}", after, until, start=0, num=limit, withscores=True)
            rows.extend((score, url.decode()) for url, score in found)
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
        urls = [u.decode() for u in self.r.smembers(f"{self.p}:h:{host}")]
        states = {}
        if urls:
            raws = self.r.hmget(f"{self.p}:s:{self._part(host)}", urls)
            states = {u: row_state(tuple(json.loads(raw))) for u, raw in zip(urls, raws) if raw}
        for url in self._deletes:
            states.pop(url, None)
        states.update((u, s) for u, s in self._puts.items() if s.host == host)
        return list(states.values())

    def state_sample(self, n: int) -> list[UrlState]:
        """Up to ``n`` states drawn at random over the partitions."""
        per = max(1, n // self.partitions)
        return [row_state(tuple(json.loads(raw))) for part in range(self.partitions)
                for raw in self.r.hrandfield(f"{self.p}:s:{part}", per, withvalues=True)[1::2]]

    def rate_sample(self, n: int) -> tuple[list[float], int]:
        total = self.count()
        if not total:
            return [], 0
        rates, drawn = [], 0
        per = max(1, n // self.partitions)
        for part in range(self.partitions):
            for raw in self.r.hrandfield(f"{self.p}:s:{part}", per, withvalues=True)[1::2]:
                drawn += 1
                rate = json.loads(raw)[COLUMNS.index("rate")]
                if rate is not None:
                    rates.append(rate)
        # (sampled rates, estimated rows with a rate): the pipeline scales its budget by the ratio
        return rates, round(total * len(rates) / max(1, drawn))

    def count(self) -> int:
        return sum(execute_pipeline(self.r, lambda pipe: [pipe.hlen(f"{self.p}:s:{part}")
                                                          for part in range(self.partitions)]))
