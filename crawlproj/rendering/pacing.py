"""Politeness for a rendered page's sub-requests: one at a time per host, rested between."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..extensions.stalls import HeldMark, crawler_held, held_mark

T = TypeVar("T")


class SubrequestPacer:
    """Serialises the browser's requests per host (or any key) and rests it between them.

    The frontier hands out a page's navigation only when its host is due and never
    two at once, so the document goes straight away. Each further request of the
    page (a script, a fetch() of JSON) waits for the one before it to finish, then
    for ``rest(key, duration)`` seconds after it, the same rest the frontier gives
    after a fetch of that duration (less the time the crawler's own thread held it, as
    the Waseda middleware reckons a fetch). The frontier rests the host again once the
    whole render is over.
    """

    def __init__(self, rest: Callable[[str, float], float], clock: Callable[[], float] = time.monotonic,
                 held: Callable[[], HeldMark] = held_mark) -> None:
        self.rest = rest
        self.clock = clock
        self.held = held
        self._locks: dict[str, asyncio.Lock] = {}
        self._free_at: dict[str, float] = {}  # key -> when its next sub-request may start

    async def run(self, key: str, fetch: Callable[[], Awaitable[T]]) -> T:
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            wait = self._free_at.get(key, 0.0) - self.clock()
            if wait > 0:
                await asyncio.sleep(wait)
            started, mark = self.clock(), self.held()
            try:
                return await fetch()
            finally:
                finished = self.clock()
                seconds = finished - started
                self._free_at[key] = finished + self.rest(key, seconds - crawler_held(seconds, mark, self.held()))
                if len(self._free_at) > 10_000:
                    self._forget(finished)

    def _forget(self, now: float) -> None:
        """Drop keys that are idle and rested: their state says nothing any more."""
        for key in [k for k, at in self._free_at.items() if at <= now and not self._locks[k].locked()]:
            del self._free_at[key], self._locks[key]
