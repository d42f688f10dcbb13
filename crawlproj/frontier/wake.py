"""Waking Scrapy's engine when the frontier's next key falls due.

Scrapy asks the scheduler for a request only after a download, an enqueue or its
5 s heartbeat, so a frontier whose every key is resting would sit idle until then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scrapy.crawler import Crawler

from ..engine_state import run_engine, wake_engine


class EngineWaker:
    """One reactor timer, set for the earliest due time asked of :meth:`at`; when it
    fires (or on :meth:`now`) the engine asks the scheduler again."""

    def __init__(self, crawler: Crawler, clock: Callable[[], float]) -> None:
        self.crawler, self.clock = crawler, clock
        self._timer: Any = None
        self._at = float("inf")

    def at(self, due: float | None) -> None:
        """Wake the engine at ``due`` (the frontier's clock), unless an earlier wake is set."""
        if due is None:
            return
        active = self._timer is not None and self._timer.active()
        if active and self._at <= due:
            return
        if active:
            self._timer.cancel()
        from twisted.internet import reactor

        self._at = due
        # At the due time: a wake a hair early finds nothing due and sets the timer again
        # (a millisecond's margin here was a millisecond lost on every fetch).
        self._timer = reactor.callLater(max(0.0, due - self.clock()), self._due)

    def now(self) -> None:
        wake_engine(self.crawler)

    def _due(self) -> None:
        # The timer's own callback: the due request goes out in this turn, not after the
        # callbacks that became ready meanwhile.
        run_engine(self.crawler)

    def cancel(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
