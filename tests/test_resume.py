"""Resume after kill -9: a real `scrapy crawl` process is SIGKILLed at several points.

Checked against the sandbox's ground truth and its server-side record: every
reachable page ends up stored, and the only pages fetched twice are those a
kill caught in flight or in an uncommitted store batch.
"""

import signal
import sqlite3
import subprocess
import time
from collections import Counter
from urllib.parse import urlsplit

import pytest

from crawlproj.frontier.journal import FrontierJournal, fingerprint
from sandbox.harness import PROJECT_DIR, crawl_command, run_crawl

pytestmark = pytest.mark.slow

BATCH = 25
CONCURRENT = 8


def stored_pages(db) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_kill_9_at_several_points_loses_nothing_and_refetches_at_most_a_batch(sandbox_factory, tmp_path):
    sandbox = sandbox_factory("--hosts", "20", "--pages", "40")
    web = sandbox.web
    expected = web.expected_crawl()
    assert len(expected) > 500
    db, jobdir = tmp_path / "crawl.db", tmp_path / "job"
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{db}", "JOBDIR": str(jobdir),
                "MIN_INTERVAL": 0.2, "CONCURRENT_REQUESTS": CONCURRENT, "STORE_BATCH_SIZE": BATCH,
                "STORE_FLUSH_INTERVAL": 0.5, "LOG_LEVEL": "INFO"}
    args = {"seeds": sandbox.seeds_file}
    # Kill points: before the first commit, then at three levels of progress.
    kills = 0
    for threshold in (0, 120, 280, 420):
        proc = subprocess.Popen(crawl_command("web", args, settings), cwd=PROJECT_DIR,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        if threshold == 0:
            while not (jobdir / "frontier" / "enqueued.log").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.3)
        else:
            while stored_pages(db) < threshold and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
        assert proc.poll() is None, "the crawl ended before the kill point"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
    before_last = stored_pages(db)
    assert before_last >= 420

    result = run_crawl("web", tmp_path / "last", args=args, settings=settings)
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["finish_reason"] == "finished"
    assert 0 < result.stats["frontier/resumed"] < len(expected) - 400, "the last run did not resume"

    with sqlite3.connect(db) as conn:
        stored = {url for (url,) in conn.execute("SELECT url FROM pages")}
    assert stored == web.expected_pages(), "a page was lost"
    fetched = Counter((r.host, r.path) for r in sandbox.records() if r.path != "/robots.txt")
    wanted = Counter()
    for url in expected:
        parts = urlsplit(url)
        wanted[(parts.hostname, parts.path + (f"?{parts.query}" if parts.query else ""))] = 1
    assert set(fetched) == set(wanted), "fetched something outside the ground truth, or missed a page"
    refetched = sum(n - 1 for n in fetched.values())
    # Per kill: at most one uncommitted batch plus the requests in flight.
    assert refetched <= kills * (BATCH + CONCURRENT), refetched
    report = sandbox.report(0.2)
    assert report["max_concurrency"] == 1


def test_journal_replays_pending_records_once_and_cuts_a_torn_tail(tmp_path):
    journal = FrontierJournal(str(tmp_path / "j"))
    journal.open()
    for i in range(10):
        journal.append((fingerprint(f"http://h/{i}"), False, "h", 0, {"url": f"http://h/{i}"}))
    journal.append((fingerprint("http://h/3"), True, "h", 0, {"url": "http://h/3"}))  # a retry
    journal.append((fingerprint("http://h/3"), True, "h", 0, {"url": "http://h/3"}))  # and another
    journal.complete([fingerprint("http://h/0"), fingerprint("http://h/5")])
    journal.close()
    with open(journal.enqueued_path, "ab") as fh:
        fh.write(b"\x40\x00\x00\x00partial")  # a kill in mid-write
    seen = []
    pending = [r[4]["url"] for r in journal.replay(seen=seen.append)]
    assert pending == [f"http://h/{i}" for i in (1, 2, 3, 4, 6, 7, 8, 9)]
    assert len(seen) == 12
    # Compaction keeps exactly the pending records and empties the completed log.
    checkpoints = []
    assert journal.compact(journal.replay(), lambda: checkpoints.append(1)) == 8
    assert checkpoints == [1]
    assert [r[4]["url"] for r in journal.replay()] == pending
    journal.open()
    journal.complete([fingerprint("http://h/1")])
    journal.close()
    assert [r[4]["url"] for r in journal.replay()] == pending[1:]


def test_resume_rebuilds_from_every_record_requeues_the_pending_and_compacts(tmp_path):
    journal = FrontierJournal(str(tmp_path / "j"))
    journal.open()
    for i in range(6):
        journal.append((fingerprint(f"http://h/{i}"), False, "h", 0, {"url": f"http://h/{i}"}))
    journal.complete([fingerprint("http://h/1"), fingerprint("http://h/4")])
    journal.close()
    seen, requeued, checkpoints = [], [], []
    pending, recorded = journal.resume(seen.append, requeued.append, lambda: checkpoints.append(len(requeued)))
    assert (pending, recorded, len(seen)) == (4, 6, 6)
    assert [r[4]["url"] for r in requeued] == [f"http://h/{i}" for i in (0, 2, 3, 5)]
    assert checkpoints == [4]  # the URL-seen state is saved after every pending record was requeued
    journal.append((fingerprint("http://h/6"), False, "h", 0, {"url": "http://h/6"}))  # open for writing again
    journal.close()
    assert [r[4]["url"] for r in journal.replay()] == [f"http://h/{i}" for i in (0, 2, 3, 5, 6)]
    # Without a checkpoint (a dupefilter that cannot save itself) the whole log is kept.
    assert journal.resume(lambda r: None, lambda r: None, None) == (5, 5)
    journal.close()
    assert sum(1 for _ in journal._read_records()) == 5


def test_spilled_queues_and_a_clean_stop_resume_to_the_exact_crawl(sandbox_factory, tmp_path):
    # Tiny buffers force nearly every queued request through the disk segments.
    sandbox = sandbox_factory("--hosts", "8", "--pages", "25")
    db = tmp_path / "crawl.db"
    settings = {"HOST_RESOLVE": sandbox.host_resolve, "STORE_URI": f"sqlite:///{db}", "JOBDIR": str(tmp_path / "job"),
                "MIN_INTERVAL": 0.02, "FRONTIER_FRONT_BUFFER": 2, "FRONTIER_BACK_BUFFER": 1}
    first = run_crawl("web", tmp_path / "first", args={"seeds": sandbox.seeds_file},
                      settings={**settings, "CLOSESPIDER_ITEMCOUNT": 30})
    assert first.returncode == 0, first.log[-3000:]
    assert first.stats["finish_reason"] == "closespider_itemcount"
    assert first.stats["frontier/queued_disk"] > 0 and first.stats["frontier/spill_bytes"] > 0
    assert first.stats["frontier/queued_memory"] + first.stats["frontier/queued_disk"] == first.stats["frontier/queued"]
    second = run_crawl("web", tmp_path / "second", args={"seeds": sandbox.seeds_file}, settings=settings)
    assert second.returncode == 0 and second.stats["finish_reason"] == "finished"
    assert second.stats["frontier/resumed"] > 0
    with sqlite3.connect(db) as conn:
        assert {u for (u,) in conn.execute("SELECT url FROM pages")} == sandbox.web.expected_pages()
    fetched = Counter((r.host, r.path) for r in sandbox.records() if r.path != "/robots.txt")
    assert max(fetched.values()) == 1  # a clean stop commits everything: nothing is fetched twice
    assert not list((tmp_path / "job" / "frontier" / "spill").glob("*.seg"))  # scratch removed on close
