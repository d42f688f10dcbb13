"""The garbage collector's tuning for a long crawl (crawlproj.extensions.gc_tuning)."""

from __future__ import annotations

import gc
import weakref

from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler
from twisted.internet.task import Clock

from crawlproj.extensions.gc_tuning import GcTuning, next_full_delay


def test_a_full_collection_runs_on_a_clock_and_frees_cycles_the_young_collections_left():
    class Connection:  # a closed connection's objects: each holds the other
        pass

    stats, clock = MemoryStatsCollector(get_crawler()), Clock()
    ext = GcTuning([], full_interval=60.0, max_share=0.01, stats=stats, clock=clock)
    thresholds = gc.get_threshold()
    try:
        ext.engine_started()
        gc.set_threshold(0)  # no automatic collection: only the extension's
        a, b = Connection(), Connection()
        a.peer, b.peer = b, a
        alive = weakref.ref(a)
        del a, b
        clock.advance(59.0)
        assert alive() is not None and not stats.get_value("gc/full_collections")
        clock.advance(1.0)
        assert alive() is None
        assert stats.get_value("gc/full_collections") == 1 and stats.get_value("gc/full_freed_objects") >= 2
        assert clock.getDelayedCalls() and clock.getDelayedCalls()[0].getTime() == 120.0
        ext.engine_stopped()
        assert not clock.getDelayedCalls()
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def test_full_collections_take_at_most_their_share_of_the_time():
    assert next_full_delay(60.0, 0.05, 0.01) == 60.0
    assert next_full_delay(60.0, 1.5, 0.01) == 150.0
    assert next_full_delay(60.0, 1.5, 0.0) == 60.0


def _full_collections_while_pages_pass(thresholds: tuple[int, int, int], objects: int) -> int:
    """Automatic full collections while ``objects`` containers are made, a tenth of them kept a
    while (as a page's are while it is in progress), under ``thresholds``."""
    full = []

    def count(phase, info):
        if phase == "stop" and info["generation"] == 2:
            full.append(1)

    before = gc.get_threshold()
    # As in a crawl past its first full collection: the start-up heap (here, whatever this process
    # held before) frozen, and the oldest generation's last collection counted without it.
    gc.freeze()
    gc.collect()
    gc.callbacks.append(count)
    gc.set_threshold(*thresholds)
    try:
        in_progress: list = []
        for i in range(objects):
            made = [i]
            if i % 10 == 0:
                in_progress.append(made)
                if len(in_progress) > 20_000:
                    del in_progress[:10_000]
    finally:
        gc.set_threshold(*before)
        gc.callbacks.remove(count)
        gc.unfreeze()
    return len(full)


def test_the_oldest_generation_is_collected_on_the_clock_not_by_allocations():
    """The young collections' survivors made Python collect the oldest generation every 20
    middle ones: every 2-5 s in a polite crawl, 60-140 ms each, every host's next request held.
    With the start-up heap frozen, the rule that a full collection waits for the survivors to be
    a quarter of the heap no longer holds it back. The default third threshold leaves it to the
    clock (GC_FULL_INTERVAL). Here with a smaller first threshold, at the defaults' ratios."""
    from crawlproj import defaults

    _, middle, oldest = defaults.GC_THRESHOLDS
    assert _full_collections_while_pages_pass((100, middle, 20), 2_000_000) >= 3  # the old third threshold
    assert _full_collections_while_pages_pass((100, middle, oldest), 2_000_000) == 0
