"""The workers' view over Redis: each worker publishes a summary; anyone can read them all.

A worker's summary lives at ``<REDIS_PREFIX>:dashboard:<worker>`` and expires a few
ticks after the worker stops publishing, so the list holds live workers only.
:func:`aggregate` makes one page's worth of data out of the summaries, for
``scrapy dashboard`` (the view of a whole crawl, served without a crawl).
"""

from __future__ import annotations

import json
import logging

import redis

logger = logging.getLogger(__name__)

SUMMARY_FIELDS = ("worker", "time", "pages", "pages_per_s", "frontier", "hosts_total", "paused", "finished")


def key_prefix(redis_prefix: str) -> str:
    return f"{redis_prefix}:dashboard:"


def publish(client: redis.Redis, prefix: str, view: dict, ttl: int) -> None:
    summary = {k: view.get(k) for k in SUMMARY_FIELDS}
    client.set(prefix + str(view["worker"]), json.dumps(summary), ex=ttl)


def read_workers(client: redis.Redis, prefix: str, now: float) -> list[dict] | None:
    """Every live worker's summary, with its age in seconds; None when Redis cannot be read."""
    try:
        keys = sorted(client.scan_iter(match=prefix + "*", count=1000))
        raw = client.mget(keys) if keys else []
    except redis.RedisError as exc:
        logger.warning("dashboard: Redis unavailable for the workers view: %s", exc)
        return None
    workers = [json.loads(r) for r in raw if r]
    for w in workers:
        w["age"] = round(max(0.0, now - w["time"]), 1)
    return workers


def aggregate(workers: list[dict], now: float, started: float, series: list) -> dict:
    """The whole crawl from its workers' summaries: sums of pages, rates and frontier sizes."""
    frontier: dict[str, float] = {}
    for w in workers:
        for k, v in (w.get("frontier") or {}).items():
            frontier[k] = frontier.get(k, 0) + (v or 0)
    return {
        "spider": "(all workers)", "worker": f"{len(workers)} workers", "time": now,
        "uptime": round(now - started, 1), "paused": False, "finished": False,
        "pages": sum(w.get("pages") or 0 for w in workers),
        "pages_per_s": round(sum(w.get("pages_per_s") or 0 for w in workers), 3),
        "series": series, "errors": {}, "frontier": frontier,
        "near_duplicates": {}, "revisit": {}, "renders": {}, "ordering": {},
        "hosts": [], "hosts_total": sum(w.get("hosts_total") or 0 for w in workers), "locations": {},
        "workers": workers,
    }
