"""The Redis connection of a distributed crawl: one Redis, or a Redis Cluster.

``REDIS_URL`` names one server. When that server is a cluster node (``cluster_enabled``),
the crawl talks to the whole cluster through redis-py's cluster client, found from that
node (or from ``REDIS_CLUSTER_NODES``, several ``host:port`` to start from, so one node
down at start does not stop it). Every key a script touches shares one hash slot
(:mod:`.keyspace`), so the same code runs on both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.commands.core import Script
from redis.exceptions import ClusterDownError, NoScriptError, TryAgainError
from redis.retry import Retry

#: How long a cluster client keeps retrying while a failed master's replica takes over
#: (cluster-node-timeout and an election): a command 40 times, 50 ms to 0.5 s apart; a pipeline
#: for FAILOVER_SECONDS.
FAILOVER_RETRIES = 40
FAILOVER_SECONDS = 20.0
#: What a failover looks like to a client: the node refuses, times out, or says the cluster is down.
RETRYABLE = (redis.ConnectionError, redis.TimeoutError, ClusterDownError, TryAgainError)


def _cluster_nodes(value: str) -> list[ClusterNode]:
    nodes = []
    for item in value.replace(",", " ").split():
        host, _, port = item.rpartition(":")
        nodes.append(ClusterNode(host or "127.0.0.1", int(port)))
    return nodes


class FailoverCluster(RedisCluster):
    """redis-py's cluster client whose single commands (scripts included) wait out a failover
    instead of failing the crawl: a command refused while a replica takes over is sent again
    for up to FAILOVER_SECONDS. Pipelines do the same in :func:`execute_pipeline` and
    :func:`run_scripts`. (A refused command that reached the node was not applied: it is
    refused on connecting, or answered CLUSTERDOWN or TRYAGAIN.)"""

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        failover = _Failover()
        while True:
            try:
                return super().execute_command(*args, **kwargs)
            except RETRYABLE as exc:
                failover.wait(exc)


def cluster_client(url: str = "", nodes: str = "", **kwargs: Any) -> RedisCluster:
    """A cluster client from ``nodes`` (``host:port ...``) or the node at ``url``; it retries
    through a failover rather than fail the crawl."""
    options = {"retry": Retry(ExponentialBackoff(cap=0.5, base=0.05), FAILOVER_RETRIES),
               "require_full_coverage": False, **kwargs}
    if nodes:
        parts = urlsplit(url) if url else None
        if parts is not None and parts.password:
            options.setdefault("password", parts.password)
        return FailoverCluster(startup_nodes=_cluster_nodes(nodes), **options)
    return FailoverCluster.from_url(url.rsplit("/", 1)[0] if url.count("/") > 2 else url, **options)


def is_cluster(client: Any) -> bool:
    return isinstance(client, RedisCluster)


def from_settings(settings) -> redis.Redis | RedisCluster:
    """A client for ``REDIS_URL`` (or ``REDIS_CLUSTER_NODES``); fails at once, naming the
    setting, if Redis cannot be reached."""
    url, nodes = settings.get("REDIS_URL"), settings.get("REDIS_CLUSTER_NODES") or ""
    timeouts = {"socket_timeout": 30, "socket_connect_timeout": 10, "health_check_interval": 30}
    name, value = ("REDIS_CLUSTER_NODES", nodes) if nodes else ("REDIS_URL", url)
    try:
        if nodes:
            return cluster_client(url, nodes, **timeouts)
        client = redis.Redis.from_url(url, **timeouts)
        if client.info("cluster").get("cluster_enabled"):
            client.close()
            return cluster_client(url, **timeouts)
        return client
    except (redis.RedisError, OSError) as exc:
        from ..errors import SettingsError

        raise SettingsError(name, value, f"cannot reach Redis: {exc}") from None


#: Waits for a failover so far in this process (the ``distributed/failover_waits`` stat).
failover_waits = 0


class _Failover:
    """Waits between a cluster pipeline's tries while a replica takes over, up to FAILOVER_SECONDS."""

    def __init__(self) -> None:
        self.deadline, self.pause = 0.0, 0.05

    def wait(self, exc: Exception) -> None:
        global failover_waits
        if not self.deadline:
            failover_waits += 1
            self.deadline = time.monotonic() + FAILOVER_SECONDS
        if time.monotonic() + self.pause > self.deadline:
            raise exc
        time.sleep(self.pause)
        self.pause = min(0.5, self.pause * 2)


def execute_pipeline(client: Any, fill: Callable[[Any], None], transaction: bool = False) -> list:
    """A pipeline filled by ``fill(pipe)``, executed; on a cluster, filled and sent again while a
    failover refuses it before it is sent (redis-py retries a cluster pipeline without waiting)."""
    failover = _Failover()
    while True:
        pipe = client.pipeline(transaction=transaction)
        fill(pipe)
        try:
            return pipe.execute()
        except RETRYABLE as exc:
            if not is_cluster(client):
                raise
            failover.wait(exc)


def run_scripts(client: Any, calls: Sequence[tuple[Script, list, list]]) -> list:
    """Run many script calls ``(script, keys, args)`` in one round trip per node; their answers.

    The scripts are loaded on each client once, and the calls go as raw ``EVALSHA`` in a
    pipeline: redis-py's own script pipeline asks ``SCRIPT EXISTS`` before every execute, a round
    trip more on the reactor's thread (13.6% of a worker's main thread in a two-worker crawl),
    and its cluster pipeline refuses ``evalsha`` by name. A call that meets a node without the
    script (a promoted replica, a restarted server) is run again through the script object,
    which loads it there; on a cluster, calls a failover refused are sent again (once the
    replica has taken over) while the others keep their answers.
    """
    if not calls:
        return []
    cluster = is_cluster(client)
    if len(calls) == 1 and not cluster:
        script, keys, args = calls[0]
        return [script(keys=keys, args=args)]
    # Loaded before their first call: a call refused for a missing script runs again after the
    # calls behind it, so a release sent ahead of a pop would come after it (the pop finding its
    # host still leased).
    loaded = client.__dict__.setdefault("_crawlproj_scripts", set())
    for script, _, _ in calls:
        if script.sha not in loaded:
            client.script_load(script.script)
            loaded.add(script.sha)
    answers: list = [None] * len(calls)
    todo, failover = list(range(len(calls))), _Failover()
    while todo:
        pipe = client.pipeline() if cluster else client.pipeline(transaction=False)
        for i in todo:
            script, keys, args = calls[i]
            # Routed here, by the client's slot table: redis-py's cluster pipeline would otherwise
            # ask its default node for the keys of every EVALSHA (a round trip each, and no way on
            # once that node has failed).
            route = {"target_nodes": client.get_node_from_key(keys[0])} if cluster else {}
            pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args, **route)
        try:
            results = pipe.execute(raise_on_error=False)
        except RETRYABLE as exc:  # refused before anything was sent
            if not cluster:
                raise
            failover.wait(exc)
            continue
        again, refusal = [], None
        for i, answer in zip(todo, results):
            if isinstance(answer, NoScriptError):  # a promoted replica, a restarted node
                loaded.clear()
                script, keys, args = calls[i]
                try:
                    answers[i] = script(keys=keys, args=args)
                except RETRYABLE as exc:
                    if not cluster:
                        raise
                    again.append(i)
                    refusal = exc
            elif isinstance(answer, RETRYABLE) and cluster:
                again.append(i)
                refusal = answer
            elif isinstance(answer, Exception):
                raise answer
            else:
                answers[i] = answer
        if again:
            failover.wait(refusal)
        todo = again
    return answers


