"""Storage: batched transactions, the commit signal, and surviving kill -9."""

import signal
import sqlite3
import subprocess
import sys
import textwrap

from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from crawlproj import signals as crawl_signals
from crawlproj.items import FetchError, PageItem
from crawlproj.store import open_store, parse_store_uri
from crawlproj.store.pipeline import StorePipeline


def page(i: int, links=()) -> PageItem:
    return PageItem(url=f"http://h{i % 3}.test/p/{i}", final_url=f"http://h{i % 3}.test/p/{i}", host=f"h{i % 3}.test",
                    status=200, content_type="text/html", charset="utf-8", fetched_at=1.0, fetch_duration=0.01,
                    bytes=100, content_hash="x", title=f"t{i}", text_length=10, depth=1, ip="127.0.0.1",
                    links=list(links))


def count(path, table="pages"):
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def test_store_uri_parsing():
    assert parse_store_uri("sqlite:///data/crawl.db") == ("sqlite", "data/crawl.db")
    assert parse_store_uri("sqlite:////tmp/x.db") == ("sqlite", "/tmp/x.db")
    for bad in ("data/crawl.db", "postgres://h/db", "sqlite://host/x.db", "sqlite:///"):
        try:
            parse_store_uri(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad} accepted")


def test_rows_are_invisible_until_one_commit_writes_them_all(tmp_path):
    db = tmp_path / "c.db"
    store = open_store(f"sqlite:///{db}")
    for i in range(100):
        store.add_page(page(i, links=[(f"http://h9.test/{i}", "a", False)]))
    store.add_error(FetchError("http://x.test/", "x.test", "dns", "no such host", 0, 1.0))
    assert count(db) == 0
    urls = store.commit()
    assert len(urls) == 101 and "http://x.test/" in urls and store.commits == 1  # pages and the error
    assert count(db) == 100 and count(db, "links") == 100 and count(db, "fetch_errors") == 1
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT fetches FROM hosts WHERE name='h0.test'").fetchone()[0] == 34
        assert conn.execute("SELECT links FROM host_links WHERE source_host='h0.test'").fetchone()[0] == 34


def test_refetched_page_replaces_its_row_and_links(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    store.add_page(page(1, links=[("http://a.test/", "a", False)]))
    store.commit()
    store.add_page(page(1, links=[("http://b.test/", "b", True)]))
    store.commit()
    assert store.query("SELECT COUNT(*) FROM pages") == [(1,)]
    assert store.query("SELECT target, nofollow FROM links") == [("http://b.test/", 1)]


def test_pipeline_batches_and_announces_commits(tmp_path):
    db = tmp_path / "c.db"
    crawler = get_crawler(settings_dict={"STORE_URI": f"sqlite:///{db}", "STORE_BATCH_SIZE": 25,
                                         "STORE_FLUSH_INTERVAL": 60})
    crawler.stats.open_spider()
    committed: list[list[str]] = []
    crawler.signals.connect(lambda urls: committed.append(urls), signal=crawl_signals.pages_committed, weak=False)
    pipeline = StorePipeline.from_crawler(crawler)
    pipeline.open_spider()
    for i in range(60):
        pipeline.process_item(page(i))
    assert count(db) == 50  # two full batches; ten rows wait for the next flush
    assert [len(c) for c in committed] == [25, 25]
    Deferred.fromCoroutine(pipeline.close_spider())  # no reactor: it writes in this thread, at once
    assert count(db) == 60 and [len(c) for c in committed] == [25, 25, 10]
    assert crawler.stats.get_value("store/commits") == 3


def test_items_wait_for_the_write_in_progress_once_store_backlog_rows_are_behind_it(tmp_path):
    """A writer slower than the crawl once kept 2,800 pages' text, links and revisit state in
    memory (800 MB): past STORE_BACKLOG rows behind a write, items wait in the pipeline, where
    ITEM_BACKLOG holds the frontier back."""
    db = tmp_path / "c.db"
    crawler = get_crawler(settings_dict={"STORE_URI": f"sqlite:///{db}", "STORE_BATCH_SIZE": 10,
                                         "STORE_FLUSH_INTERVAL": 60, "STORE_BACKLOG": 25})
    crawler.stats.open_spider()
    pipeline = StorePipeline.from_crawler(crawler)
    pipeline.open_spider()
    gate, write = Deferred(), pipeline.writer.run

    async def held(fn, *args):  # the writer thread, busy until the gate opens
        await gate
        return await write(fn, *args)

    pipeline.writer.run = held
    items = [page(i) for i in range(40)]
    results = [pipeline.process_item(item) for item in items]
    # 10 rows go to the held write; 24 wait for the next batch; from the 25th, the items wait too
    assert results[:34] == items[:34] and count(db) == 0
    waiting = [Deferred.fromCoroutine(c) for c in results[34:]]  # coroutines: Scrapy awaits them
    assert all(not d.called for d in waiting)
    assert crawler.stats.get_value("store/backlog_waits") == 6
    got: list = []
    for d in waiting:
        d.addCallback(got.append)
    gate.callback(None)
    assert got == items[34:] and count(db) == 10
    Deferred.fromCoroutine(pipeline.close_spider())
    assert count(db) == 40


WRITER = textwrap.dedent(
    """
    import sys
    from crawlproj.items import PageItem
    from crawlproj.store import open_store
    store = open_store(sys.argv[1])
    i = 0
    while True:
        for _ in range(50):
            store.add_page(PageItem(url=f"http://h.test/{i}", final_url="", host="h.test", status=200,
                content_type=None, charset=None, fetched_at=0, fetch_duration=0, bytes=10000,
                content_hash="", title="x" * 500, text_length=0, depth=0,
                links=[(f"http://h.test/{i}/{j}", "anchor", False) for j in range(20)]))
            i += 1
        store.commit()
        print(i, flush=True)
    """
)


def test_kill_9_never_corrupts_and_keeps_every_committed_batch(tmp_path):
    for attempt in range(3):
        db = tmp_path / f"k{attempt}.db"
        proc = subprocess.Popen([sys.executable, "-c", WRITER, f"sqlite:///{db}"], stdout=subprocess.PIPE, text=True)
        acknowledged = 0
        for _ in range(5 + 7 * attempt):
            acknowledged = int(proc.stdout.readline())
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            stored = conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
            links = conn.execute("SELECT COUNT(*) FROM links").fetchone()[0]
        assert stored >= acknowledged, "a committed batch was lost"
        assert stored % 50 == 0, "a batch was half written"
        assert links == stored * 20


def test_sitemap_entries_and_ai_signals_are_stored_replaced_and_merged(tmp_path):
    from dataclasses import replace

    from crawlproj.content.sitemaps import SitemapEntry
    from crawlproj.store.merge import merge_shards

    shards = []
    for n, lastmod in enumerate((100.0, 200.0)):
        store = open_store(f"sqlite:///{tmp_path}/shard{n}.db")
        store.add_sitemap_urls("http://a.test/sitemap.xml", [SitemapEntry("http://a.test/1", lastmod, "daily", 0.5),
                                                             SitemapEntry("http://b.test/2")], at=float(n))
        store.set_ai_signals("a.test", "robots.txt", {"ai-train": "no", "search": "yes"}, at=float(n))
        store.add_page(replace(page(0), url="http://a.test/1", final_url="http://a.test/1", host="a.test",
                               fetched_at=float(n),
                               ai_signals={"robots.txt:ai-train": "no", "header:tdm-reservation": str(n)}))
        store.commit()
        if n == 1:  # robots.txt changed its mind: the host's rows are replaced, not added to
            store.set_ai_signals("a.test", "robots.txt", {"ai-input": "no"}, at=2.0)
            store.commit()
        store.close()
        shards.append(str(tmp_path / f"shard{n}.db"))
    merge_shards(str(tmp_path / "merged.db"), shards)
    conn = sqlite3.connect(tmp_path / "merged.db")
    assert conn.execute("SELECT url, host, lastmod, changefreq, priority FROM sitemap_urls ORDER BY url").fetchall() == [
        ("http://a.test/1", "a.test", 200.0, "daily", 0.5), ("http://b.test/2", "b.test", None, None, None)]
    rows = set(conn.execute("SELECT subject, source, name, value FROM ai_signals"))
    # The host's robots.txt rows are the host's, not copied to its pages; the newest reading wins.
    assert rows == {("a.test", "robots.txt", "ai-input", "no"), ("a.test", "robots.txt", "ai-train", "no"),
                    ("a.test", "robots.txt", "search", "yes"), ("http://a.test/1", "header", "tdm-reservation", "1")}
    shard1 = sqlite3.connect(shards[1])
    assert set(shard1.execute("SELECT name FROM ai_signals WHERE subject = 'a.test'")) == {("ai-input",)}


def test_the_stats_file_is_one_whole_document_when_two_workers_write_it_at_once(tmp_path):
    """Two workers of one crawl close together with the same STATS_FILE: one opened the file,
    the other wrote its stats, then the first wrote its shorter ones. The file must still be
    one JSON document (a shared open file kept the longer one's tail after the shorter)."""
    import json

    from scrapy.utils.test import get_crawler as crawler_for

    from crawlproj.extensions.statsfile import StatsFile

    path = tmp_path / "stats.json"
    other = open(path, "w", encoding="utf-8")  # the other worker, about to write
    crawler = crawler_for(settings_dict={"STATS_FILE": str(path)})
    crawler.stats.set_value("long/" + "x" * 500, 1)
    crawler.stats.set_value("finish_reason", "finished")  # Scrapy's CoreStats, at spider_closed
    StatsFile(crawler, str(path)).engine_stopped()
    other.write('{"short": 1}')
    other.close()
    stats = json.loads(path.read_text())
    assert stats["finish_reason"] == "finished" and ("long/" + "x" * 500) in stats
