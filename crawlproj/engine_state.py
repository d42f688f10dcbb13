"""What Scrapy's engine knows and does not say publicly: whether it is closing the spider,
its scheduler, and how to make it ask that scheduler again.

Scrapy keeps these on the engine's private slot (``closing`` set at a close of any reason:
``closespider_timeout``, SIGTERM, the spider idle) and has no public way to them; every
component asks here, so a Scrapy that moves them is met in one place.
"""

from __future__ import annotations

from typing import Any


def engine_closing(crawler: Any) -> bool:
    """Whether the crawl's engine is closing the spider, or has no spider open (not before it opens)."""
    slot = _slot(crawler)
    return slot is None or slot.closing is not None or not getattr(crawler.engine, "running", True)


def _slot(crawler: Any) -> Any:
    engine = crawler.engine
    return getattr(engine, "_slot", None) if engine is not None else None


def engine_scheduler(crawler: Any) -> Any:
    """The scheduler of the crawl's open spider (None before it opens or after it closes)."""
    return getattr(_slot(crawler), "scheduler", None)


def wake_engine(crawler: Any) -> None:
    """Make the engine ask its scheduler for a request now (it asks only after a download, an
    enqueue or its 5 s heartbeat)."""
    slot = _slot(crawler)
    if slot is not None:
        slot.nextcall.schedule()


def run_engine(crawler: Any) -> None:
    """Make the engine ask its scheduler for a request in this turn of the reactor, not the next
    (:func:`wake_engine` waits behind every callback ready meanwhile: 1.3 ms a due host, on
    average, in a polite crawl). Only from a reactor callback of its own, never from inside the
    engine."""
    slot = _slot(crawler)
    if slot is None:
        return
    call = slot.nextcall
    if call._call is not None:  # the next turn's ask, already set: this one replaces it
        call._call.cancel()
    call()
