"""The frontier scheduler on Redis: every politeness rule of the local frontier, shared state."""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.dupefilters import BaseDupeFilter
from twisted.internet import task

from ..frontier.domains import DomainBudget
from ..frontier.scheduler import FrontierScheduler
from . import connection
from .workers import worker_id
from .dupefilter import RedisBloomDupeFilter
from .frontier import RedisFrontier
from .ordering import SHARED, SharedTable

logger = logging.getLogger(__name__)


class DistributedScheduler(FrontierScheduler):
    """:class:`FrontierScheduler` over a :class:`RedisFrontier` shared by every worker.

    Each worker heartbeats every ``WORKER_HEARTBEAT`` seconds: it renews itself and its
    partitions (leases of ``PARTITION_LEASE`` seconds), takes its share of
    ``FRONTIER_PARTITIONS`` as workers come and go, and returns the work of workers
    silent for ``WORKER_TTL`` to the frontier. A request stays pending in Redis until the
    worker's store commits its page (:data:`crawlproj.signals.pages_committed`), so a
    kill -9 loses nothing: another worker fetches it again. Redis's persistence (AOF)
    is the journal; ``JOBDIR`` is not used.
    """

    def __init__(self, crawler: Crawler, dupefilter: BaseDupeFilter) -> None:
        super().__init__(crawler, dupefilter)
        s = crawler.settings
        self.heartbeat_every = s.getfloat("WORKER_HEARTBEAT")
        self.partition_lease = s.getfloat("PARTITION_LEASE")
        # Importance state must follow a URL to whichever worker fetches it: a hash for all of them.
        for component, _ in self.prioritizer.components:
            if component.name in SHARED:
                self.prioritizer.replace(component.name, SHARED[component.name](
                    self.frontier.r, f"{s.get('REDIS_PREFIX')}:{component.name}"))
        if isinstance(dupefilter, RedisBloomDupeFilter):
            self.frontier.seen = dupefilter
        self._heartbeat: task.LoopingCall | None = None

    def _build_journal(self, jobdir: str | None) -> None:
        return None  # Redis is the journal: nothing local to create, even with a JOBDIR

    def _build_frontier(self, s: Any, levels: int) -> RedisFrontier:
        """The shared frontier in Redis: no local queues or spill files."""
        self.worker = worker_id(s)
        client = connection.from_settings(s)
        if connection.is_cluster(client) and self.keys.mode == "ip":
            from ..errors import SettingsError

            # A URL's seen-bits live with its host, its queue with its address: two slots, and the
            # push must set one and fill the other atomically.
            raise SettingsError("FRONTIER_KEY", "ip", "a Redis Cluster needs FRONTIER_KEY host or domain "
                                "(PER_IP_CONCURRENCY and PER_IP_RATE still share a server's politeness)")
        return RedisFrontier(
            client, s.get("REDIS_PREFIX"), self.worker,
            partitions=s.getint("FRONTIER_PARTITIONS"), levels=levels,
            batch=s.getint("REDIS_POP_BATCH"), lease_seconds=s.getfloat("HOST_LEASE"),
            worker_ttl=s.getfloat("WORKER_TTL"), poll_seconds=s.getfloat("REDIS_POLL_SECONDS"),
            shared=s.getbool("REDIS_SHARED_PARTITIONS"), clock=self.clock, group_cap=self.keys.per_ip,
            group_rate=self.keys.per_ip_rate, lazy_release=True)

    def _build_domains(self, s: Any) -> DomainBudget:
        """The budgets per registered domain, counted by this worker, with no overflow: any
        worker may take a URL this one queued, so no worker sees a host of its domain run dry."""
        return DomainBudget(s.getint("DOMAIN_MAX_HOSTS"), s.getint("MAX_PAGES_PER_DOMAIN"), 0)

    def open(self, spider: Spider) -> None:
        super().open(spider)
        self._heartbeat = task.LoopingCall(self._beat)
        self._heartbeat.start(self.heartbeat_every, now=True)
        logger.info("worker %s joined %s: partitions %s", self.worker, self.frontier.prefix, self.frontier.owned)

    def _beat(self) -> None:
        before = self.frontier.owned
        owned = self.frontier.heartbeat(self.partition_lease)
        self.stats.set_value("distributed/partitions", len(owned))
        self.stats.set_value("distributed/returned_from_dead_workers", self.frontier.returned)
        self.stats.set_value("distributed/leases_expired", self.frontier.leases_expired)
        self.stats.set_value("distributed/per_ip_refusals", self.frontier.group_refusals)
        self.stats.set_value("distributed/failover_waits", connection.failover_waits)
        long_form, lean_form = self.frontier.packed  # how many queued entries needed the long form
        self.stats.set_value("distributed/entries_lean", lean_form)
        self.stats.set_value("distributed/entries_long", long_form)
        if owned != before:
            logger.info("worker %s holds %d partitions", self.worker, len(owned))
            self.waker.now()

    def next_request(self) -> Any:
        request = super().next_request()
        # A fetch's release rides with the pop; one handed out of the popped batch, or none asked
        # (pages piling up), sends it here.
        self.frontier.send(pushes=False)
        return request

    def close(self, reason: str) -> None:
        if self._heartbeat is not None and self._heartbeat.running:
            self._heartbeat.stop()
        self.stats.set_value("distributed/failover_waits", connection.failover_waits)
        for component, _ in self.prioritizer.components:
            if isinstance(component, SharedTable):
                component.flush()  # the last takes' decrements, not sent yet
        self.frontier.leave()
        super().close(reason)

    def _opt_out_redis(self, s: Any) -> tuple[Any, str]:
        """The shared opt-out set: ``SADD <prefix>:opt_out example.org`` reaches every worker."""
        return connection.from_settings(s), f"{s.get('REDIS_PREFIX')}:opt_out"

    def _forget(self, ukey: str) -> None:
        self.frontier.complete([ukey])

    def _pages_committed(self, urls: list[str]) -> None:
        self.stats.inc_value("distributed/completed", self.frontier.complete(urls))
