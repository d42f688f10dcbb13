"""Round trips to a shared store (Redis), made off the reactor's thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class RemoteCalls:
    """One thread of its own for a component's calls that wait on the network: each is awaited
    there, not on the reactor's thread, one at a time in the order asked (a worker of a
    two-worker crawl spent 43.6% of its main thread waiting on Redis). The thread starts on
    the first call."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._pool: ThreadPoolExecutor | None = None
        self.closed = False

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"crawlproj-{self.name}")
        return await asyncio.wrap_future(self._pool.submit(fn, *args))

    def close(self, wait: bool = True) -> None:
        """No more calls; with ``wait``, the ones asked have ended."""
        self.closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=wait)
