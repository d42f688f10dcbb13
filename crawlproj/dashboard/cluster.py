"""The workers' view over Redis: each worker publishes a summary; anyone can read them all.

A worker's summary lives at ``<REDIS_PREFIX>:dashboard:<worker>`` and expires a few
ticks after the worker stops publishing, so the list holds live workers only. The workers that
published are listed in ``<REDIS_PREFIX>:dashboard`` (a sorted set by time), so a reader asks
for those keys alone: a SCAN of the keyspace for them took seconds of each worker's reactor at
every tick once a broad crawl's Redis held millions of keys (bench/broad.py, found by py-spy).
:func:`aggregate` makes one page's worth of data out of the summaries, for
``scrapy dashboard`` (the view of a whole crawl, served without a crawl).
"""

from __future__ import annotations

import json
import logging

import redis
from redis.exceptions import RedisClusterException

logger = logging.getLogger(__name__)

SUMMARY_FIELDS = ("worker", "time", "pages", "pages_per_s", "frontier", "hosts_total", "paused", "finished",
                  # and what /metrics serves (crawlproj.dashboard.metrics)
                  "items", "bytes", "statuses", "errors", "hosts_by_rule", "near_duplicates", "revisit", "renders",
                  "store", "deadletters", "estimate", "memory")
#: Summed over the workers: numbers, and dicts of numbers (frontier sizes, by kind, by status class, ...).
_SUMMED = ("frontier", "items", "bytes", "statuses", "errors", "hosts_by_rule", "near_duplicates", "revisit", "renders",
           "store", "deadletters", "memory")


def _sum(values: list) -> object:
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if numbers:
        return sum(numbers)
    out: dict = {}
    for value in values:
        for k, v in (value or {}).items() if isinstance(value, dict) else ():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = out.get(k, 0) + v
    return out


def key_prefix(redis_prefix: str) -> str:
    return f"{redis_prefix}:dashboard:"


def _index(prefix: str) -> str:
    """The sorted set of the workers that published (no worker's key: those go on after ``prefix``)."""
    return prefix.rstrip(":")


def publish(client: redis.Redis, prefix: str, view: dict, ttl: int) -> None:
    summary = {k: view.get(k) for k in SUMMARY_FIELDS}
    client.set(prefix + str(view["worker"]), json.dumps(summary), ex=ttl)
    client.zadd(_index(prefix), {str(view["worker"]): view["time"]})


def read_workers(client: redis.Redis, prefix: str, now: float) -> list[dict] | None:
    """Every live worker's summary, with its age in seconds; None when Redis cannot be read.
    A worker whose summary expired leaves the index."""
    try:
        names = sorted(n.decode() for n in client.zrange(_index(prefix), 0, -1))
        # On a Redis Cluster the workers' keys lie in many slots: one MGET per slot.
        raw = getattr(client, "mget_nonatomic", client.mget)([prefix + n for n in names]) if names else []
        gone = [n for n, r in zip(names, raw) if not r]
        if gone:
            client.zrem(_index(prefix), *gone)
    except (redis.RedisError, RedisClusterException) as exc:
        logger.warning("dashboard: Redis unavailable for the workers view: %s", exc)
        return None
    workers = [json.loads(r) for r in raw if r]
    for w in workers:
        w["age"] = round(max(0.0, now - w["time"]), 1)
    return workers


def aggregate(workers: list[dict], now: float, started: float, series: list) -> dict:
    """The whole crawl from its workers' summaries: sums of pages, rates, frontier sizes and the
    figures /metrics serves; the latest completion estimate."""
    summed = {name: _sum([w.get(name) for w in workers]) for name in _SUMMED}
    for part, rate, numerator, denominator in (("near_duplicates", "rate", "duplicates", "checked"),
                                               ("revisit", "change_rate", "changed", "requests")):
        figures = summed[part]  # a sum of rates is no rate: the whole crawl's, from its sums
        figures[rate] = round(figures[numerator] / figures[denominator], 4) if figures.get(denominator) else None
    # Memory adds up over the processes; its growth is the worst worker's (each per its own pages).
    summed["memory"]["growth_per_1000_pages"] = max(
        ((w.get("memory") or {}).get("growth_per_1000_pages") for w in workers
         if (w.get("memory") or {}).get("growth_per_1000_pages") is not None), default=None)
    return {
        "spider": "(all workers)", "worker": f"{len(workers)} workers", "time": now,
        "uptime": round(now - started, 1), "paused": False, "finished": False,
        "pages": sum(w.get("pages") or 0 for w in workers),
        "pages_per_s": round(sum(w.get("pages_per_s") or 0 for w in workers), 3),
        "series": series, "ordering": {},
        "hosts": [], "hosts_total": sum(w.get("hosts_total") or 0 for w in workers), "locations": {},
        "workers": workers,
        **summed,
        # The crawl ends when its last worker does.
        "estimate": max((w["estimate"] for w in workers if w.get("estimate")), key=lambda e: e["seconds"], default=None),
    }
