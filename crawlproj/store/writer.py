"""A pipeline's writes, in order, in a thread of their own (off the reactor's thread).

Measured on real documentation pages in a polite crawl (py-spy, the reactor's
thread): a batch commit of the store held the reactor up to 380 ms, and gzipping a
large page into the WARC 100-300 ms. Every host's due request waited that long, and
the crawl fell short of its politeness bound. zlib and SQLite release the GIL while
they work, and the interpreter hands it back every ``PAGE_THREAD_SWITCH_INTERVAL``
in between.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from scrapy.utils.reactor import is_asyncio_reactor_installed

T = TypeVar("T")


def asyncio_reactor() -> bool:
    """Whether asyncio's reactor runs (work in a thread can then be awaited from Scrapy's
    coroutines); False with no reactor at all (a pipeline or a script used on its own)."""
    try:
        return is_asyncio_reactor_installed()
    except RuntimeError:
        return False


class WriterThread:
    """Runs ``fn(*args)`` calls one at a time, in the order they were given, in one thread.

    :meth:`run` is awaited from Scrapy's coroutines. Without asyncio's reactor it calls
    ``fn`` at once in the caller's thread (threads need asyncio's loop to be awaited).
    :meth:`close` waits for every write given before it.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.threaded = asyncio_reactor()
        self._executor: ThreadPoolExecutor | None = None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        if not self.threaded:
            return fn(*args)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"crawlproj-{self.name}")
        return await asyncio.wrap_future(self._executor.submit(fn, *args))

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
