"""Each politeness key's state, and what a finished fetch does to it (pure: no Twisted, no I/O).

The Waseda middleware (:mod:`crawlproj.downloadermiddlewares.waseda_interval`) owns the crawl's one
:class:`HostPoliteness`, records each fetch of a key (a host, a domain or an address,
``FRONTIER_KEY``) in it and so learns when the key may go again and whether it must be
held back longer; the frontier enforces that:

* the interval (:class:`~crawlproj.politeness.interval.IntervalPolicy`): the minimum, the
  Waseda rule over the key's last ``WASEDA_WINDOW`` fetches, the Mercator duration rule,
  robots.txt's ``Crawl-delay`` and a server's back-off (429/503 with ``Retry-After``);
* holds beyond it (the Waseda crawler): parked after ``HOST_PARK_AFTER`` failures in a row,
  suspended after ``SUSPEND_AFTER_SECONDS`` / ``SUSPEND_AFTER_PAGES`` of continuous
  crawling, paused after the server closes keep-alive, and backed off before a retry.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from . import feedback
from .host_spill import KeyStateSpill
from .interval import HostWindow, Interval, IntervalPolicy

#: Rules that hold a key back beyond its interval.
HELD = ("suspended", "parked", "keepalive")


@dataclass(frozen=True)
class Hold:
    """Keep a key back until ``until`` (beyond its interval), because of ``rule`` (counted as ``stat``)."""

    until: float
    rule: str
    stat: str


#: The fetches whose durations the duration rule reads (:func:`typical_duration`).
DURATION_SAMPLES = 3


def typical_duration(recent: tuple[float, ...]) -> float:
    """The duration Mercator's rule rests a key for, from its last fetches' (oldest first): the
    median of the last three, or the last until there are three. One slow fetch among fast ones
    is mostly the crawler's own hiccup (a browser's CPU beside it): on documentation sites that
    nginx served in about a millisecond, 51-76 lone fetches read 20-50 ms and each rested its
    host 0.3-0.5 s; a server that is slow stays slow, and two slow fetches of three rest it."""
    if len(recent) < DURATION_SAMPLES:
        return recent[-1]
    return sorted(recent[-DURATION_SAMPLES:])[DURATION_SAMPLES // 2]


@dataclass(frozen=True)
class FetchVerdict:
    """What one finished fetch means for its key."""

    interval: Interval
    release_at: float  # when the key may go again, by its interval
    holds: tuple[Hold, ...]  # longer rests on top of it
    failure: str | None  # how the fetch failed at the host (dns, timeout, connection, http_5xx)
    backoff: bool  # the server asked for a rest (429/503-like)


class HostPoliteness:
    """Per key: the Waseda window, the Crawl-delay, the rest owed to a robots.txt fetch,
    failures in a row, the continuous session, and the interval and rule in force."""

    def __init__(self, policy: IntervalPolicy, window_size: int = 10, waseda_min_bytes: int = 0,
                 backoff_statuses: frozenset[int] = frozenset({429, 503}), backoff_default: float = 60.0,
                 backoff_max: float = 3600.0, park_after: int = 0, park_for: float = 0.0,
                 suspend_after: tuple[float, int] = (0.0, 0), suspend_for: float = 0.0,
                 keepalive_pause: float = 0.0, retry_backoff: tuple[float, float] = (0.0, 0.0),
                 rng: random.Random | None = None, memory_keys: int = 0, spill_dir: str = "") -> None:
        self.policy = policy
        self.window_size, self.waseda_min_bytes = window_size, waseda_min_bytes
        self.backoff_statuses, self.backoff_default, self.backoff_max = backoff_statuses, backoff_default, backoff_max
        self.park_after, self.park_for = park_after, park_for
        self.suspend_after, self.suspend_for = suspend_after, suspend_for
        self.keepalive_pause = keepalive_pause
        self.retry_base, self.retry_max = retry_backoff
        self.rng = rng or random.Random()
        self.rules: dict[str, str] = {}  # key -> the rule that set its current rest
        self.intervals: dict[str, Interval] = {}  # key -> its last interval (with every rule's part)
        self.crawl_delay: dict[str, float] = {}
        self._windows: dict[str, HostWindow] = {}
        self._robots_rest: dict[str, float] = {}  # key -> when its robots.txt fetch's rest ends
        self._failures: dict[str, int] = {}  # key -> fetches failed in a row
        self._sessions: dict[str, list[float]] = {}  # key -> [start, pages, last fetch] of its continuous crawl
        self._durations: dict[str, tuple[float, ...]] = {}  # key -> its last fetches' durations (typical_duration)
        #: Idle keys' state spilled beyond the ``memory_keys`` used last (0: all kept in memory).
        self.spill = KeyStateSpill(memory_keys, self._take, self._give, spill_dir) if memory_keys else None

    def _tables(self) -> tuple[dict, ...]:
        return (self.rules, self.intervals, self.crawl_delay, self._windows, self._robots_rest, self._failures,
                self._sessions, self._durations)

    def _take(self, key: str) -> dict[int, object] | None:
        """``key``'s state out of every table, by table (None: it has none)."""
        state = {i: table.pop(key) for i, table in enumerate(self._tables()) if key in table}
        return state or None

    def _give(self, key: str, state: dict[int, object]) -> None:
        tables = self._tables()
        for i, value in state.items():
            tables[i][key] = value

    def _touch(self, key: str) -> None:
        if self.spill is not None:
            self.spill.touch(key)

    @classmethod
    def from_settings(cls, s: Any) -> HostPoliteness:
        return cls(IntervalPolicy.from_settings(s), s.getint("WASEDA_WINDOW"), s.getint("WASEDA_MIN_BYTES"),
                   frozenset(int(x) for x in s.getlist("BACKOFF_STATUSES")), s.getfloat("BACKOFF_DEFAULT"),
                   s.getfloat("BACKOFF_MAX"), s.getint("HOST_PARK_AFTER"), s.getfloat("HOST_PARK_FOR"),
                   (s.getfloat("SUSPEND_AFTER_SECONDS"), s.getint("SUSPEND_AFTER_PAGES")), s.getfloat("SUSPEND_FOR"),
                   s.getfloat("KEEPALIVE_CLOSE_PAUSE"), (s.getfloat("RETRY_BACKOFF_BASE"), s.getfloat("RETRY_BACKOFF_MAX")),
                   memory_keys=s.getint("HOST_STATE_MEMORY"), spill_dir=s.get("FRONTIER_SPILL_DIR") or "")

    def fetched(self, key: str, observed: Any, duration: float, ended: float, now: float,
                wall_now: float) -> FetchVerdict:
        """A fetch of ``key`` that reached the network ended at ``ended`` after ``duration``
        seconds of the server's time; ``observed`` is its raw outcome (a response or an
        exception). ``wall_now`` (epoch seconds) reads a ``Retry-After`` date."""
        self._touch(key)
        sample = feedback.sample(observed, duration, self.waseda_min_bytes)
        window = self._windows.get(key)
        if sample is not None:
            if window is None:
                window = self._windows[key] = HostWindow(self.window_size)
            window.record(*sample)
        backoff = feedback.backoff_seconds(observed, self.backoff_statuses, self.backoff_default,
                                           self.backoff_max, wall_now)
        recent = self._durations[key] = (*self._durations.get(key, ())[-(DURATION_SAMPLES - 1):], duration)
        interval = self.policy.interval(typical_duration(recent), self.crawl_delay.get(key), window, backoff)
        self.rules[key] = interval.rule
        self.intervals[key] = interval
        # The rest runs from the moment the download ended: the server was idle from then.
        failure = feedback.failure_kind(observed)
        holds = [h for h in (self._failed(key, failure, now), self._session(key, now)) if h is not None]
        if feedback.closed_keepalive(observed):
            hold = self.keepalive_closed(key, now)
            if hold is not None:
                holds.append(hold)
        return FetchVerdict(interval, ended + interval.seconds, tuple(holds), failure, backoff is not None)

    def robots_fetched_for(self, key: str) -> bool:
        """Whether ``key``'s robots.txt was fetched for the visit that is ending (it rests after it)."""
        self._touch(key)
        return key in self._robots_rest

    def unfetched(self, key: str, next_allowed: float) -> float:
        """When ``key`` may go again after a request that never reached the network (robots.txt
        said no, or its fetch took the visit): only that robots.txt fetch needs rest."""
        self._touch(key)
        return max(next_allowed, self._robots_rest.pop(key, next_allowed))

    def robots_fetched(self, key: str, crawl_delay: float | None, duration: float | None, now: float) -> None:
        """``key``'s robots.txt was fetched now, taking ``duration``; it set ``crawl_delay``."""
        self._touch(key)
        if crawl_delay is not None:
            self.crawl_delay[key] = crawl_delay
        self._robots_rest[key] = now + self.policy.interval(duration, crawl_delay).seconds

    def rest_after(self, key: str, duration: float) -> float:
        """Seconds ``key`` rests after a fetch of ``duration`` seconds (the minimum interval,
        its Crawl-delay, the duration rule)."""
        self._touch(key)
        return self.policy.interval(duration, self.crawl_delay.get(key)).seconds

    def keepalive_closed(self, key: str, now: float) -> Hold | None:
        """The server closed keep-alive: rest the key (the Waseda crawler), when that is on."""
        self._touch(key)
        return self._hold(key, now + self.keepalive_pause, "keepalive", "frontier/keepalive_pauses") \
            if self.keepalive_pause else None

    def retry_hold(self, retries: int, now: float) -> Hold:
        """A request's ``retries``-th retry is never sent straight back: its key waits an
        exponential back-off (``RETRY_BACKOFF_BASE`` doubling, up to ``RETRY_BACKOFF_MAX``),
        jittered by 0.5-1.5x so retries to one host do not come back in step."""
        wait = min(self.retry_max, self.retry_base * 2 ** (retries - 1)) * self.rng.uniform(0.5, 1.5)
        return Hold(now + wait, "retry", "frontier/retries_deferred")

    def describe(self, key: str) -> dict[str, Any]:
        """The interval in force and every rule's part, the rule that set the rest, the Crawl-delay."""
        self._touch(key)
        row: dict[str, Any] = {"rule": self.rules.get(key), "crawl_delay": self.crawl_delay.get(key)}
        interval = self.intervals.get(key)
        if interval is not None:
            row["interval"] = round(interval.seconds, 3)
            row["components"] = {name: round(v, 3) for name, v in interval.components}
        return row

    def _hold(self, key: str, until: float, rule: str, stat: str) -> Hold:
        self.rules[key] = rule
        return Hold(until, rule, stat)

    def _failed(self, key: str, failure: str | None, now: float) -> Hold | None:
        """Count a failed attempt; park a key whose last ``park_after`` all failed."""
        if failure is None:
            self._failures.pop(key, None)
            return None
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        if self.park_after and failures >= self.park_after:
            self._failures.pop(key)
            return self._hold(key, now + self.park_for, "parked", "frontier/hosts_parked")
        return None

    def _session(self, key: str, now: float) -> Hold | None:
        """Suspend a key for ``suspend_for`` after continuous crawling (the Waseda crawler)."""
        after_seconds, after_pages = self.suspend_after
        if not (after_seconds or after_pages):
            return None
        session = self._sessions.get(key)
        if session is None or now - session[2] > self.suspend_for:  # a rest this long ends a session
            session = self._sessions[key] = [now, 0, now]
        session[1] += 1
        session[2] = now
        if (after_seconds and now - session[0] >= after_seconds) or (after_pages and session[1] >= after_pages):
            del self._sessions[key]
            return self._hold(key, now + self.suspend_for, "suspended", "frontier/suspensions")
        return None


_states: WeakKeyDictionary = WeakKeyDictionary()


def host_politeness(crawler: Any) -> HostPoliteness:
    """The crawl's one :class:`HostPoliteness`, made from its settings on first use: the Waseda
    middleware records fetches in it, the frontier reads rests and holds from it."""
    state = _states.get(crawler)
    if state is None:
        state = _states[crawler] = HostPoliteness.from_settings(crawler.settings)
    return state
