"""Page records, the feed exporters, Parquet, WET, feed targets and the search index's text, on
pages made here (the crawls that make them for real are in test_exports_crawl.py)."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import sqlite3
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

import pytest
from scrapy.utils.test import get_crawler

from crawlproj.items import PageContent
from crawlproj.exports import feeds, records
from crawlproj.exports.targets import feed_problem, unwritable
from crawlproj.items import FetchError, PageItem, SitemapUrls, Skipped
from crawlproj.store import open_store, search
from crawlproj.store.content import ContentPolicy, kept

PDF = b"%PDF-1.7\n\x00\xff binary"


def page(i: int = 1, **kw) -> PageItem:
    values = dict(url=f"http://a.test/{i}", final_url=f"http://a.test/{i}", host="a.test", status=200,
                  content_type="text/html; charset=iso-8859-1", charset="iso-8859-1", fetched_at=1_700_000_000.25,
                  fetch_duration=0.1, bytes=10, content_hash="h", title="The <title>", depth=1, language="fr",
                  links=[("http://a.test/z", "zed", False), ("http://a.test/b", "bee", True),
                         ("http://a.test/z", "zed", True)],
                  body="<p>Ça</p>".encode("iso-8859-1"), response_headers=[("Content-Type", "text/html")],
                  content=PageContent(text="Ça va.\n\nLigne\x0c2", markdown="# Ça va", title="Ça",
                                      description="d", author="A", published="2024-01-02", canonical_url="http://a.test/c"))
    values.update(kw)
    return PageItem(**values)


def test_a_record_has_the_default_fields_in_order_typed():
    r = records.record(page())
    assert tuple(r) == records.DEFAULT_FIELDS
    assert r["fetched_at"] == datetime(2023, 11, 14, 22, 13, 20, 250000, tzinfo=timezone.utc)
    assert records.iso(r["fetched_at"]) == "2023-11-14T22:13:20.250Z"
    assert r["title"] == "Ça" and r["language"] == "fr" and r["published"] == "2024-01-02"
    # Links as objects, once per (target, anchor) as the store keeps them, in the store's order.
    assert r["links"] == [{"url": "http://a.test/b", "anchor": "bee", "nofollow": True},
                          {"url": "http://a.test/z", "anchor": "zed", "nofollow": False}]
    bare = records.record(page(content=None, title=None, language=""))
    assert bare["text"] is None and bare["markdown"] is None and bare["title"] is None and bare["language"] is None


def test_bodies_are_text_in_the_pages_charset_or_base64_and_only_when_named():
    fields = ("url", "body_encoding", "body", "response_headers")
    html = records.record(page(), fields)
    assert list(html) == list(fields) and html["body"] == "<p>Ça</p>" and html["body_encoding"] == "text"
    assert html["response_headers"] == [{"name": "Content-Type", "value": "text/html"}]
    pdf = records.record(page(content_type="application/pdf", charset=None, body=PDF), fields)
    assert pdf["body_encoding"] == "base64" and base64.b64decode(pdf["body"]) == PDF
    assert "body" not in records.record(page())


def test_the_policy_drops_markdown_and_cuts_text_saying_why():
    content = page().content
    assert kept(content, ContentPolicy()) is content
    assert kept(content, ContentPolicy(markdown=False)).markdown == ""
    short = kept(content, ContentPolicy(max_chars=4))
    assert (short.text, short.markdown, short.limited) == ("Ça v", "# Ça", "max_chars")
    assert kept(PageContent(text="x" * 9, limited="over_budget/depth"), ContentPolicy(max_chars=4)).limited == \
        "over_budget/depth"


def test_feeds_get_stored_pages_only():
    accepts = feeds.PageFilter({}).accepts
    assert accepts(page())
    assert not accepts(page(not_modified=True))  # a 304 revisit read nothing new
    assert not any(accepts(item) for item in (FetchError("u", "h", "dns", "m", 0, 0.0), Skipped("u", "robots"),
                                              SitemapUrls("s")))
    assert accepts({"url": "u", "h1": "A title"})  # a project's own spider's own items are its own


def test_the_add_on_gives_every_feed_the_page_filter_unless_it_has_one():
    from scrapy.settings import Settings

    settings = Settings({"FEEDS": {"a.jsonl": {"format": "jsonl"}, "b.csv": {"format": "csv", "item_filter": "x.Y"}}})
    feeds.PageFeeds().update_settings(settings)
    assert settings.getdict("FEEDS") == {"a.jsonl": {"format": "jsonl", "item_filter": feeds.PAGE_FILTER},
                                         "b.csv": {"format": "csv", "item_filter": "x.Y"}}


def export(exporter_class, items, **kwargs) -> bytes:
    out = io.BytesIO()
    crawler = get_crawler(settings_dict={"CONTENT_STORE": True, "CONTENT_MARKDOWN": False, "CONTENT_MAX_CHARS": 0,
                                         "CONTENT_SEARCH": True})
    exporter = exporter_class.from_crawler(crawler, out, encoding="utf-8", **kwargs)
    exporter.start_exporting()
    for item in items:
        exporter.export_item(item)
    exporter.finish_exporting()
    return out.getvalue()


def test_json_lines_hold_iso_times_and_the_crawls_content_policy():
    lines = export(feeds.JsonLinesExporter, [page(1), page(2)]).decode().splitlines()
    first = json.loads(lines[0])
    assert len(lines) == 2 and first["fetched_at"] == "2023-11-14T22:13:20.250Z"
    assert first["markdown"] == "" and first["text"] == "Ça va.\n\nLigne\x0c2"  # CONTENT_MARKDOWN off
    assert "Ça" in lines[0]  # UTF-8, not \u escapes


def test_fields_to_export_choose_and_order_the_fields_or_rename_them():
    out = json.loads(export(feeds.JsonLinesExporter, [page()], fields_to_export=["title", "url"]))
    assert list(out) == ["title", "url"]
    out = json.loads(export(feeds.JsonExporter, [page()], fields_to_export={"url": "address", "status": "code"}))[0]
    assert out == {"address": "http://a.test/1", "code": 200}


def test_csv_cells_hold_json_for_links_and_empty_for_none():
    rows = list(csv.DictReader(io.StringIO(export(feeds.CsvExporter, [page(), page(2, content=None)]).decode())))
    assert list(rows[0]) == list(records.DEFAULT_FIELDS)
    assert json.loads(rows[0]["links"])[0] == {"url": "http://a.test/b", "anchor": "bee", "nofollow": True}
    assert rows[1]["text"] == "" and rows[0]["fetched_at"] == "2023-11-14T22:13:20.250Z"


def test_xml_is_well_formed_whatever_the_text_holds():
    root = ET.fromstring(export(feeds.XmlExporter, [page()]))
    item = root.find("item")
    assert item.find("text").text == "Ça va.\n\nLigne\ufffd2"  # a form feed is no XML character
    assert [v.find("nofollow").text for v in item.find("links")] == ["true", "false"]


def test_parquet_has_typed_columns_in_bounded_row_groups(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from crawlproj.exports import parquet

    monkeypatch.setattr(parquet, "ROW_GROUP_ROWS", 3)
    monkeypatch.setattr(parquet, "BATCH_ROWS", 2)  # a row group is closed between batches
    path = tmp_path / "p.parquet"
    path.write_bytes(export(feeds.ParquetExporter, [page(i) for i in range(7)]))
    table = pq.read_table(path)
    row_groups = pq.ParquetFile(path).metadata
    assert [row_groups.row_group(i).num_rows for i in range(row_groups.num_row_groups)] == [4, 3]
    assert table.schema.field("fetched_at").type == parquet.TYPES["fetched_at"]
    assert table.column("links").to_pylist()[0][0] == {"url": "http://a.test/b", "anchor": "bee", "nofollow": True}
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"
    empty = tmp_path / "e.parquet"
    empty.write_bytes(export(feeds.ParquetExporter, [], fields_to_export=["url", "status"]))
    assert pq.read_table(empty).schema.names == ["url", "status"]


def test_a_feed_that_cannot_be_written_is_named_before_the_crawl(tmp_path):
    formats = ["jsonl", "parquet"]
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert "is a file, so" in feed_problem(str(blocker / "dir" / "p.jsonl"), {"format": "jsonl"}, formats, None, 1)
    assert "is a directory" in feed_problem(str(tmp_path), {"format": "jsonl"}, formats, None, 1)
    assert "unknown format 'foo'" in feed_problem(str(tmp_path / "p.foo"), {"format": "foo"}, formats, None, 1)
    assert "no format" in feed_problem(str(tmp_path / "p"), {}, formats, None, 1)
    assert "unknown field 'bodyy'" in feed_problem(str(tmp_path / "p.jsonl"), {"format": "jsonl"}, formats,
                                                   ["url", "bodyy"], 1)
    assert "WORKERS" in feed_problem(str(tmp_path / "p.jsonl"), {"format": "jsonl"}, formats, None, 2)
    (tmp_path / "old.parquet").write_bytes(b"PAR1")
    assert "a Parquet file appended" in feed_problem(str(tmp_path / "old.parquet"), {"format": "parquet"}, formats,
                                                     None, 1)
    assert feed_problem(str(tmp_path / "old.parquet"), {"format": "parquet", "overwrite": True}, formats, None, 1) is None
    assert feed_problem(str(tmp_path / "new" / "deeper" / "p.jsonl"), {"format": "jsonl"}, formats, None, 1) is None
    assert feed_problem("s3://bucket/p.jsonl", {"format": "jsonl"}, formats, None, 1) is None
    assert feed_problem(f"file://{tmp_path}/%(name)s/%(time)s.jsonl", {"format": "jsonl"}, formats, None, 1) is None
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert unwritable(str(locked / "p.jsonl")).startswith("no permission to write in")


# -- the search index's text and queries -----------------------------------------------------

def test_cjk_runs_are_indexed_and_queried_as_bigrams():
    assert search.index_text("東京都庁は新宿") == " 東京 京都 都庁 庁は は新 新宿 "
    assert search.index_text("Python入門 (第2版)") == "Python 入門  ( 第 2 版 )"
    assert search.parse("東京都").expression == '"東京 京都"'
    assert search.parse('crawl "the web" index* OR NOT').expression == '"crawl" "the web" "index"*'
    assert search.parse('NOT "" -- ;').expression == ""
    assert search.parse('a NOT b').terms == ("a",)


def test_snippets_highlight_stems_cjk_and_letters_with_diacritics():
    text = "Intro. " * 80 + "A crawler crawled the résumé pages of 東京都 politely. " + "Tail. " * 80
    window, spans = search.snippet(text, ("crawling", "resume", "東京"))
    assert window.startswith("… ") and window.endswith(" …") and len(window) < 300
    assert [window[a:b] for a, b in spans] == ["crawler", "crawled", "résumé", "東京"]
    hit = search.Hit("u", "t", -1.0, "a crawl here", ((2, 7),))
    assert search.marked(hit, "[", "]") == "a [crawl] here"


def test_stored_pages_are_searched_ranked_replaced_and_duplicates_left_out(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    store.add_page(page(1, content=PageContent(text="Vacuum reclaims storage. Vacuum often.", title="Routine vacuuming")))
    store.add_page(page(2, content=PageContent(text="Indexes speed up vacuum rarely.", title="Indexes")))
    store.add_page(page(3, content=PageContent(text="東京都庁は新宿にあります。", title="都庁")))
    store.add_page(page(4, duplicate_of="http://a.test/1", duplicate_kind="exact", jaccard=1.0,
                        content=PageContent(text="Vacuum reclaims storage.")))
    store.commit()
    hits = search.search(store.conn, "vacuum")
    assert [h.url for h in hits] == ["http://a.test/1", "http://a.test/2"]  # the title counts; no duplicate
    assert len(search.search(store.conn, "vacuum", duplicates=True)) == 3
    assert [h.url for h in search.search(store.conn, "新宿")] == ["http://a.test/3"]
    assert search.search(store.conn, "京都")[0].url == "http://a.test/3"  # any two characters of a run
    store.add_page(page(1, content=PageContent(text="Nothing about it now.", title="Other")))
    store.add_page(page(3, content=None))
    store.commit()
    assert [h.url for h in search.search(store.conn, "vacuum")] == ["http://a.test/2"]
    assert search.search(store.conn, "新宿") == [] and search.indexed_pages(store.conn) == 3
    assert search.search(store.conn, "nothing")[0].url == "http://a.test/1"
    # Each replaced entry went out whole: the index's terms and counts are a rebuild's.
    store.conn.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, 'page_search', 'instance')")
    before = sorted(store.query("SELECT * FROM temp.terms"))
    assert search.reindex(store.conn) == 3
    assert sorted(store.query("SELECT * FROM temp.terms")) == before and ("vacuum", 2, "text", 2) not in before
    store.close()


def test_the_store_keeps_content_compressed_and_as_the_policy_says(tmp_path):
    from crawlproj.store.content import read

    store = open_store(f"sqlite:///{tmp_path / 'c.db'}", ContentPolicy(markdown=False, max_chars=5, search=False))
    long = "word " * 2000
    store.add_page(page(1, content=PageContent(text=long, markdown=long)))
    store.commit()
    row = store.query("SELECT text_chars, markdown_chars, markdown, limited, indexed, length(text) FROM page_content")
    assert row == [(5, 0, None, "max_chars", 0, row[0][5])]
    assert read(store.conn, "http://a.test/1").text == "word "
    store.close()
    store = open_store(f"sqlite:///{tmp_path / 'd.db'}")
    store.add_page(page(1, content=PageContent(text=long, markdown=long)))
    store.commit()
    (text_bytes,) = store.query("SELECT length(text) FROM page_content")[0]
    assert text_bytes < len(long) / 50  # zstd on a repetitive text
    store.close()
    store = open_store(f"sqlite:///{tmp_path / 'd.db'}", ContentPolicy(store=False))
    store.add_page(page(1, content=PageContent(text="new")))
    store.commit()  # stored again without content kept: the old content goes
    assert store.query("SELECT COUNT(*) FROM page_content") == [(0,)]
    assert store.query("SELECT COUNT(*) FROM page_search_docsize") == [(0,)]
    store.close()


def test_a_store_from_before_content_gets_its_tables_on_open(tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE pages (url TEXT PRIMARY KEY, final_url TEXT, host TEXT NOT NULL, status INTEGER, "
                 "content_type TEXT, charset TEXT, fetched_at REAL, fetch_duration REAL, bytes INTEGER, "
                 "content_hash TEXT, title TEXT, text_length INTEGER, depth INTEGER)")
    conn.execute("INSERT INTO pages (url, host, status, fetched_at) VALUES ('http://o.test/', 'o.test', 200, 1.0)")
    conn.commit()
    conn.close()
    from crawlproj.exports.reading import stored_pages

    (old,) = stored_pages([str(db)])
    assert old.url == "http://o.test/" and old.content is None and old.language == ""
    store = open_store(f"sqlite:///{db}")
    store.add_page(page(1))
    store.commit()
    assert {n for (n,) in store.query("SELECT name FROM sqlite_master")} >= {"page_content", "page_search"}
    store.close()


@pytest.mark.parametrize("indexed", [True, False])
def test_shards_merge_their_latest_content_and_search_entries(tmp_path, indexed):
    from crawlproj.exports.reading import stored_pages
    from crawlproj.store.merge import merge_shards

    policy = ContentPolicy(search=indexed)
    for n, (text, at) in enumerate((("first words", 1.0), ("later words", 2.0), ("stale words", 0.5))):
        store = open_store(f"sqlite:///{tmp_path}/shard{n}.db", policy)
        store.add_page(page(1, fetched_at=at, content=PageContent(text=text)))
        store.add_page(page(10 + n, fetched_at=at, content=PageContent(text=f"own {n}")))
        store.commit()
        store.close()
    shards = [str(tmp_path / f"shard{n}.db") for n in range(3)]
    # Read together, each URL once, from its latest fetch, as a merge keeps it.
    together = {p.url: p.content.text for p in stored_pages(shards)}
    assert together == {"http://a.test/1": "later words", "http://a.test/10": "own 0", "http://a.test/11": "own 1",
                        "http://a.test/12": "own 2"}
    merge_shards(str(tmp_path / "merged.db"), shards)
    merged = sqlite3.connect(tmp_path / "merged.db")
    assert {p.url: p.content.text for p in stored_pages([str(tmp_path / "merged.db")])} == together
    assert [u for u, in merged.execute("SELECT url FROM page_content WHERE indexed = 1 ORDER BY url")] == (
        sorted(together) if indexed else [])
    if indexed:
        assert [h.url for h in search.search(merged, "words")] == ["http://a.test/1"]
        assert search.search(merged, "first") == [] and search.search(merged, "stale") == []
