"""How long a host must rest after a fetch (pure logic).

The frontier asks a policy object for each finished fetch; next-allowed time
is then the finish time plus the interval. The policy also says which rule set
the interval, for stats and the dashboard.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    seconds: float
    rule: str  # min_interval | duration | crawl_delay


class MercatorPolicy:
    """interval = max(MIN_INTERVAL, DURATION_FACTOR x last fetch duration, robots Crawl-delay).

    Mercator waited 10 times the last fetch's duration, so a slow server gets
    proportionally more rest. Crawl-delay counts once robots.txt is known, up to
    ``max_crawl_delay`` so one robots.txt cannot park a host for a day.
    """

    def __init__(self, min_interval: float = 1.0, duration_factor: float = 10.0, max_crawl_delay: float = 60.0):
        self.min_interval = min_interval
        self.duration_factor = duration_factor
        self.max_crawl_delay = max_crawl_delay

    @classmethod
    def from_settings(cls, settings) -> MercatorPolicy:  # noqa: ANN001 - Scrapy Settings
        return cls(
            settings.getfloat("MIN_INTERVAL"),
            settings.getfloat("INTERVAL_DURATION_FACTOR"),
            settings.getfloat("MAX_CRAWL_DELAY"),
        )

    def interval(self, duration: float | None, crawl_delay: float | None = None) -> Interval:
        best = Interval(self.min_interval, "min_interval")
        if duration is not None and self.duration_factor * duration > best.seconds:
            best = Interval(self.duration_factor * duration, "duration")
        if crawl_delay is not None and min(crawl_delay, self.max_crawl_delay) > best.seconds:
            best = Interval(min(crawl_delay, self.max_crawl_delay), "crawl_delay")
        return best
