"""Pages that change as Poisson processes under an accelerated clock (pure; no I/O).

Each page of a changing sandbox has its own mean time between changes, drawn
log-uniformly between ``change_min`` and ``change_max`` (crawl-clock seconds,
deterministic from the seed). Crawl-clock time runs ``time_scale`` times faster
than real time, the same factor a crawler gets as ``REVISIT_TIME_SCALE``, so a
test can show a month of revisits in a minute.

Change times are generated lazily and kept per page: asking for a page's version
at a later time only draws the changes in between, and every answer is
reproducible for a given seed and origin.
"""

from __future__ import annotations

import math
import random


class PageChanges:
    """The version of every page at any (real) time after ``origin``."""

    def __init__(self, seed: int, change_min: float, change_max: float, time_scale: float = 1.0,
                 origin: float = 0.0) -> None:
        if not 0 < change_min <= change_max:
            raise ValueError("need 0 < change_min <= change_max")
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self.seed, self.change_min, self.change_max = seed, change_min, change_max
        self.time_scale, self.origin = time_scale, origin
        # (host, k) -> [rng, version, last change, next change], times in crawl-clock seconds from origin
        self._state: dict[tuple[int, int], list] = {}

    def mean_interval(self, host: int, k: int) -> float:
        """The page's mean time between changes, in crawl-clock seconds."""
        u = random.Random(f"{self.seed}:{host}:{k}:rate").random()
        lo, hi = math.log(self.change_min), math.log(self.change_max)
        return math.exp(lo + u * (hi - lo))

    def version(self, host: int, k: int, now: float) -> tuple[int, float]:
        """(changes so far, real time of the last change) at real time ``now``; before the first
        change, a time before ``origin`` (a Poisson process's backward-recurrence time)."""
        state = self._state.get((host, k))
        if state is None:
            rng = random.Random(f"{self.seed}:{host}:{k}:changes")
            mean = self.mean_interval(host, k)
            # The page last changed before the sandbox started, as a page found on the web has.
            state = self._state[(host, k)] = [rng, 0, -rng.expovariate(1 / mean), rng.expovariate(1 / mean)]
        rng, version, last, upcoming = state
        clock = (now - self.origin) * self.time_scale
        mean = self.mean_interval(host, k)
        while upcoming <= clock:
            version, last = version + 1, upcoming
            upcoming += rng.expovariate(1 / mean)
        state[1:] = [version, last, upcoming]
        return version, self.origin + last / self.time_scale
