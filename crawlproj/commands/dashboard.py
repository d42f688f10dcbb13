"""``scrapy dashboard``: the live view of a whole distributed crawl, from Redis, with no crawl here.

Every worker of the distributed profile publishes its snapshot to Redis
(``DASHBOARD_REDIS``); this serves their sum and the workers' table on
``DASHBOARD_HOST:DASHBOARD_PORT`` with the same tokens and page as a worker's own
dashboard. It only looks: pause and stop a worker from that worker's dashboard.
"""

from __future__ import annotations

import time

from scrapy.commands import ScrapyCommand

from ..dashboard import cluster
from ..dashboard.board import RateSeries
from ..dashboard.server import DashboardResource, listen, tokens_from_settings
from ..distributed import connection


def _look_only(action: str) -> str:
    raise ValueError("the crawl-wide view only looks: control a worker from its own dashboard")


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_LEVEL": "INFO"}

    def short_desc(self) -> str:
        return "Serve the live dashboard of a distributed crawl from Redis (all workers)"

    def run(self, args: list[str], opts) -> None:
        from twisted.internet import reactor, task

        s = self.settings
        client = connection.from_settings(s)
        prefix = cluster.key_prefix(s.get("REDIS_PREFIX"))
        tokens = tokens_from_settings(s)
        resource = DashboardResource(*tokens, control=_look_only)
        interval = s.getfloat("DASHBOARD_INTERVAL")
        series, started = RateSeries.ten_minutes(interval), time.time()

        def tick() -> None:
            now = time.time()
            workers = cluster.read_workers(client, prefix, now) or []
            total = sum(w.get("pages") or 0 for w in workers)
            series.tick(now, total)
            resource.publish(cluster.aggregate(workers, now, started, series.points()))

        listen(resource, s.get("DASHBOARD_HOST"), s.getint("DASHBOARD_PORT"), tokens, s.get("DASHBOARD_URL_FILE"))
        task.LoopingCall(tick).start(interval, now=True)
        reactor.run()
