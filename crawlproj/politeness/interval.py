"""How long a host must rest after a fetch (pure logic).

The frontier asks a policy object for each finished fetch; next-allowed time
is then the finish time plus the interval. The policy also says which rule set
the interval, for stats and the dashboard.

Rules (the interval in force is the largest of those enabled):

* ``min_interval``: the floor, ``MIN_INTERVAL``.
* ``waseda``: the dynamic interval of the Waseda 10-billion-page crawler (Muraoka et al.),
  ``min_interval + max_delay_1 * max(0, 1 - speed / target_speed) + max_delay_2 * errors / 10``
  over the host's last 10 fetches (:class:`HostWindow`).
* ``duration``: Mercator's ``k x`` the last fetch's duration.
* ``crawl_delay``: robots.txt ``Crawl-delay``, capped.
* ``backoff``: after a 429 or 503 the host rests until ``Retry-After`` (or a default).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Interval:
    seconds: float
    rule: str  # min_interval | waseda | duration | crawl_delay | backoff
    #: every rule that took part, (rule, seconds), so an operator sees why (the dashboard shows them)
    components: tuple[tuple[str, float], ...] = field(default=(), compare=False)


class HostWindow:
    """A host's last ``size`` fetches: (bytes, seconds, error) each."""

    __slots__ = ("samples",)

    def __init__(self, size: int = 10) -> None:
        self.samples: deque[tuple[int, float, bool]] = deque(maxlen=size)

    def record(self, nbytes: int, seconds: float, error: bool = False) -> None:
        self.samples.append((nbytes, seconds, error))

    @property
    def speed(self) -> float | None:
        """Effective speed in bytes/s: the mean of the successful fetches' bytes/seconds."""
        speeds = [b / s for b, s, e in self.samples if not e and s > 0]
        return sum(speeds) / len(speeds) if speeds else None

    @property
    def errors(self) -> int:
        return sum(1 for _, _, e in self.samples if e)


def waseda_interval(min_interval: float, max_delay_1: float, max_delay_2: float, target_speed: float,
                    speed: float | None, errors: int) -> float:
    """The Waseda formula. An unknown speed (no successful fetch yet) adds nothing."""
    slowness = max(0.0, 1.0 - speed / target_speed) if speed is not None and target_speed > 0 else 0.0
    return min_interval + max_delay_1 * slowness + max_delay_2 * errors / 10


class IntervalPolicy:
    """interval = max(enabled rules): min_interval, waseda, duration, crawl_delay, backoff.

    Mercator waited 10 times the last fetch's duration, so a slow server gets
    proportionally more rest; Waseda adds rest for a slow line and for errors.
    Crawl-delay counts once robots.txt is known, up to ``max_crawl_delay`` so one
    robots.txt cannot park a host for a day. A back-off (429/503) is the time
    left until its end, so it holds even when shorter rules would let go.
    """

    def __init__(self, min_interval: float = 1.0, duration_factor: float = 10.0, max_crawl_delay: float = 60.0,
                 waseda: bool = True, max_delay_1: float = 10.0, max_delay_2: float = 30.0,
                 target_speed: float = 65536.0):
        self.min_interval = min_interval
        self.duration_factor = duration_factor
        self.max_crawl_delay = max_crawl_delay
        self.waseda = waseda
        self.max_delay_1 = max_delay_1
        self.max_delay_2 = max_delay_2
        self.target_speed = target_speed

    @classmethod
    def from_settings(cls, settings) -> IntervalPolicy:  # noqa: ANN001 - Scrapy Settings
        return cls(
            settings.getfloat("MIN_INTERVAL"),
            settings.getfloat("INTERVAL_DURATION_FACTOR"),
            settings.getfloat("MAX_CRAWL_DELAY"),
            settings.getbool("WASEDA_INTERVAL_ENABLED"),
            settings.getfloat("WASEDA_SLOW_DELAY"),
            settings.getfloat("WASEDA_ERROR_DELAY"),
            settings.getfloat("WASEDA_TARGET_SPEED"),
        )

    def interval(self, duration: float | None, crawl_delay: float | None = None,
                 window: HostWindow | None = None, backoff: float | None = None) -> Interval:
        """The rest after a fetch of ``duration`` seconds; ``backoff`` is seconds still owed."""
        parts = [("min_interval", self.min_interval)]
        if self.waseda and window is not None:
            parts.append(("waseda", waseda_interval(self.min_interval, self.max_delay_1, self.max_delay_2,
                                                    self.target_speed, window.speed, window.errors)))
        if duration is not None:
            parts.append(("duration", self.duration_factor * duration))
        if crawl_delay is not None:
            parts.append(("crawl_delay", min(crawl_delay, self.max_crawl_delay)))
        if backoff is not None:
            parts.append(("backoff", backoff))
        rule, seconds = parts[0]
        for name, value in parts[1:]:  # the first rule to reach the maximum names it
            if value > seconds:
                rule, seconds = name, value
        return Interval(seconds, rule, tuple(parts))
