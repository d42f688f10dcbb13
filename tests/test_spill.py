"""Disk-backed frontier queues: order, memory bound, segment clean-up (no Twisted)."""

import os
import random

import pytest

from crawlproj.frontier.spill import SegmentStore, SpillQueue, spill_factory
from crawlproj.frontier.tiers import TwoTierFrontier


@pytest.fixture
def store(tmp_path):
    s = SegmentStore(str(tmp_path / "spill"), segment_bytes=4096)
    yield s
    s.close()


def test_fifo_order_survives_interleaved_appends_and_pops(store):
    q = SpillQueue(store, buffer=4)
    model, rng, n = [], random.Random(1), 0
    for _ in range(5000):
        if rng.random() < 0.55:
            q.append({"url": f"http://h/{n}"})
            model.append({"url": f"http://h/{n}"})
            n += 1
        elif model:
            assert q.popleft() == model.pop(0)
        assert len(q) == len(model)
        assert q.in_memory <= 2 * 4
    while model:
        assert q.popleft() == model.pop(0)
    with pytest.raises(IndexError):
        q.popleft()


def test_short_queue_never_touches_disk(store):
    q = SpillQueue(store, buffer=8)
    for i in range(8):
        q.append(i)
    assert store.disk_entries == 0 and store.disk_bytes == 0
    q.append(8)
    assert q.in_memory == 9 and store.disk_entries == 0  # the ninth waits in the tail


def test_memory_is_bounded_and_the_middle_is_on_disk(store):
    q = SpillQueue(store, buffer=16)
    for i in range(10_000):
        q.append(("key", 0, {"url": f"http://example.com/page/{i}"}))
    assert q.in_memory <= 32
    assert store.disk_entries == 10_000 - q.in_memory
    assert store.disk_bytes > 0
    assert [q.popleft()[2]["url"] for _ in range(10_000)] == [f"http://example.com/page/{i}" for i in range(10_000)]


def test_segments_are_deleted_once_read_back(store):
    q = SpillQueue(store, buffer=16)
    for i in range(20_000):
        q.append("x" * 50 + str(i))
    segments = len(os.listdir(store.directory))
    assert segments > 3
    for _ in range(20_000):
        q.popleft()
    assert len(os.listdir(store.directory)) == 1  # only the segment being written
    assert store.disk_entries == 0


def test_store_wipes_stale_segments_on_open(tmp_path):
    directory = tmp_path / "spill"
    directory.mkdir()
    (directory / "00000000.seg").write_bytes(b"stale")
    store = SegmentStore(str(directory))
    assert os.listdir(directory) == ["00000000.seg"] and (directory / "00000000.seg").stat().st_size == 0
    store.close()
    assert not directory.exists()


def test_two_tier_frontier_over_spill_queues_hands_out_everything_in_order(store):
    frontier = TwoTierFrontier(levels=2, active_target=3, queue_factory=spill_factory(store, 32, 4))
    expected = {f"h{h}": [f"h{h}/{i}" for i in range(300)] for h in range(10)}
    for i in range(300):
        for h in range(10):
            frontier.push(f"h{h}", f"h{h}/{i}", level=0)
    assert store.disk_entries > 0
    got: dict[str, list[str]] = {}
    now = 0.0
    while frontier.has_pending():
        popped = frontier.pop(now)
        assert popped is not None
        key, entry = popped
        got.setdefault(key, []).append(entry)
        frontier.release(key, now)
    assert got == expected
    assert store.disk_entries == 0


def test_a_killed_crawls_temporary_spill_folder_is_removed_when_the_next_crawl_starts(tmp_path, monkeypatch):
    import subprocess
    import sys
    import tempfile

    from scrapy.settings import Settings

    from crawlproj.frontier.spill import SPILL_PREFIX

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{SPILL_PREFIX}{dead.pid}-abc"  # a crawl killed with -9 left it behind
    stale.mkdir()
    (stale / "00000000.seg").write_bytes(b"x" * 1000)
    running = tmp_path / f"{SPILL_PREFIX}{os.getpid()}-def"  # another crawl, still running
    running.mkdir()
    other = tmp_path / "someone-elses"
    other.mkdir()
    store = SegmentStore.from_settings(Settings({"FRONTIER_FRONT_BUFFER": 8, "FRONTIER_BACK_BUFFER": 8,
                                                 "FRONTIER_SEGMENT_BYTES": 4096}))
    try:
        assert not stale.exists() and running.exists() and other.exists()
        assert os.path.basename(store.directory).startswith(f"{SPILL_PREFIX}{os.getpid()}-")
    finally:
        store.close()
    assert not os.path.exists(store.directory)
