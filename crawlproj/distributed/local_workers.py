"""``-s WORKERS=N``: N crawl processes on this machine over one Redis frontier.

One Python process uses one core: parsing, link extraction and the item pipelines
hold the GIL. With ``WORKERS`` above 1, ``scrapy crawl`` starts a local
``redis-server`` on a free loopback port, runs N copies of itself as workers of a
distributed crawl (the distributed profile's scheduler, URL-seen filter,
near-duplicate index and revisit queue, all in that Redis), and when the last one
ends, merges their store shards into the crawl's own store and stops Redis.

Nothing is lost to a kill: Redis keeps its data beside the store
(``<store>.redis/``, an append-only file synced every second), so running the same
command again resumes the crawl where it stopped, as a single crawl's ``JOBDIR`` does.

With ``REDIS_URL`` or ``REDIS_CLUSTER_NODES`` given on the command line, the workers use
that Redis (or Redis Cluster) instead, with the default partitions, and start none.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

from contextlib import nullcontext

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings

from ..extensions.console import default_stats_file, record_last_crawl
from ..store import beside_store, settings_store
from ..store.warc_pipeline import warc_directory
from ..store.merge import merge_shards

logger = logging.getLogger(__name__)


def shard_dir(store_path: str) -> Path:
    """Where the workers' shards go: ``data/crawl.db`` -> ``data/crawl.workers/``."""
    return Path(beside_store(store_path, "workers", ""))


def given_redis(settings: BaseSettings) -> bool:
    """Whether the user named a Redis for the workers (else they get a local one)."""
    return any(settings.get(name) and _asked(settings, name) for name in ("REDIS_URL", "REDIS_CLUSTER_NODES"))


def _asked(settings: BaseSettings, name: str) -> bool:
    """Whether the user set ``name`` (on the command line, in the environment...), not the project."""
    return settings.getpriority(name) > SETTINGS_PRIORITIES["project"]


def worker_overrides(settings: BaseSettings, redis_url: str, index: int) -> dict[str, str]:
    """The settings that make one crawl process worker ``index`` of a local distributed crawl
    (on top of everything the user set: profile, scope, politeness)."""
    store = settings_store(settings)
    worker = f"worker{index}"
    local = {  # one machine, a few workers, a Redis of their own: any free worker takes any due
        # host, and looks often
        "REDIS_URL": redis_url,
        "REDIS_SHARED_PARTITIONS": "True",
        "REDIS_POLL_SECONDS": "0.01",
        "FRONTIER_PARTITIONS": "8",
        "REDIS_POP_BATCH": "1",
    }
    return {
        "WORKERS": "1",
        "WORKER_ID": worker,
        "LAST_CRAWL_FILE": "",  # the crawl is the merged store: run_workers records it, not a shard
        **({} if given_redis(settings) else local),
        "SCHEDULER": "crawlproj.distributed.scheduler.DistributedScheduler",
        "DUPEFILTER_CLASS": "crawlproj.distributed.dupefilter.RedisBloomDupeFilter",
        # Shared unless asked otherwise: each worker's own index on its disk (a host's pages all
        # go to one worker) keeps Redis to the queue and the revisit state (docs/distributed.md).
        "NEAR_DUPLICATES_INDEX_CLASS": (settings.get("NEAR_DUPLICATES_INDEX_CLASS")
                                        if _asked(settings, "NEAR_DUPLICATES_INDEX_CLASS")
                                        else "crawlproj.distributed.near_duplicates.RedisNearDuplicateIndex"),
        "REVISIT_QUEUE_CLASS": "crawlproj.distributed.revisit_queue.RedisRevisitQueue",
        "DASHBOARD_REDIS": "True",
        "REFERER_ENABLED": "False",  # as in the distributed profile: queued URLs stay lean in Redis
        "STORE_URI": f"sqlite:///{os.path.abspath(shard_dir(store) / worker / 'crawl.db')}",
        # Every worker's WARC files in the crawl's one WARC directory, named after the worker.
        "WARC_DIR": os.path.abspath(warc_directory(settings)),
        "WARC_PREFIX": f"{settings.get('WARC_PREFIX')}-{worker}",
        # One dead-letter queue beside the crawl's store, where `scrapy deadletters` looks (the
        # local redis-server stops with the crawl).
        "DEADLETTERS_CLASS": "crawlproj.store.deadletters.SqliteDeadLetters",
        "DEADLETTERS_DB": os.path.abspath(settings.get("DEADLETTERS_DB") or beside_store(store, "deadletters")),
        # The workers keep every CPU busy: the browser takes whatever CPU is idle, on any core.
        "RENDER_BROWSER_SPARE_CPUS": str(settings.getint("RENDER_BROWSER_SPARE_CPUS")
                                         if _asked(settings, "RENDER_BROWSER_SPARE_CPUS") else 0),
    }


def run_workers(argv: list[str], settings: BaseSettings) -> int:
    """Run ``scrapy <argv>`` as ``WORKERS`` workers over a local Redis; merge their shards.
    Returns the exit status: 0 when every worker ended well."""
    from .redis_server import RedisServer

    count = settings.getint("WORKERS")
    store = settings_store(settings)
    if "site" in argv[1:2]:
        logger.warning("WORKERS=%d on one site: politeness lets one request at a time go to a host, so the workers "
                       "beyond the first mostly wait for it (WORKERS pays on crawls of many hosts)", count)
    redis_dir = beside_store(store, "redis", "")
    given = given_redis(settings)
    with (nullcontext(None) if given else RedisServer(appendonly="everysec", data_dir=redis_dir)) as redis:
        if given:
            logger.info("%d workers over %s", count, settings.get("REDIS_CLUSTER_NODES") or settings.get("REDIS_URL"))
        else:
            logger.info("%d workers over redis-server %s (data in %s)", count, redis.url, redis_dir)
        procs = []
        for index in range(1, count + 1):
            extra = [f"-s{k}={v}" for k, v in worker_overrides(settings, redis.url if redis else "", index).items()]
            procs.append(subprocess.Popen([sys.executable, "-m", "scrapy", *argv, *extra]))

        def forward(signum: int, _frame: object) -> None:  # Ctrl-C or a kill stops the workers cleanly
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signum)

        previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            codes = [proc.wait() for proc in procs]
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    shards = sorted(str(p) for p in shard_dir(store).glob("*/crawl.db"))
    if shards:
        summary = merge_shards(store, shards)
        logger.info("merged %d worker shards into %s: %d pages", summary["shards"], store, summary["pages"])
        if settings.get("LAST_CRAWL_FILE"):  # `scrapy report` and the others read the merged store
            stats = settings.get("STATS_FILE") or default_stats_file(settings.get("STORE_URI"))
            record_last_crawl(settings.get("LAST_CRAWL_FILE"), settings.get("STORE_URI"),
                              stats if stats and os.path.exists(stats) else None)
    failed = [(index, code) for index, code in enumerate(codes, 1) if code != 0]
    for index, code in failed:
        logger.error("worker%d exited with status %d (its log is above, among the others')", index, code)
    if not failed and not (summary["pages"] if shards else 0):
        print("crawlproj: no page was stored by any worker (their logs above say why)", file=sys.stderr)
        return 1
    return failed[0][1] if failed else 0
