"""What users take away from a crawl, end to end: real documentation pages (Debian's PostgreSQL
manual, its Developer's Reference in Japanese, a real PDF) served by nginx on loopback, crawled
with Scrapy's feeds on (-O pages.jsonl, .parquet, .csv, .xml); then `scrapy export` (JSON lines,
Parquet read back by DuckDB, WET read back by warcio), `scrapy search` and `scrapy wacz`."""

from __future__ import annotations

import base64
import csv
import gzip
import json
import os
import re
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlproj.exports.records import DEFAULT_FIELDS
from crawlproj.store.content import read
from sandbox import docsites, pdfs
from sandbox.harness import PROJECT_DIR, error_lines, run_crawl
from sandbox.servers import NginxServer

pytestmark = pytest.mark.slow

JA, PG = docsites.LANGUAGE_SITES[3], docsites.SITES[0]
PG_PAGES = 60  # MAX_PAGES_PER_HOST: the manual's first 60 pages
FEEDS = ("jsonl", "parquet", "csv", "xml")


def _files_site(root: Path) -> None:
    """A page linking a real PDF and a binary file (an EPUB: stored as a capture, not read)."""
    root.mkdir(parents=True)
    (root / "manual.pdf").write_bytes(pdfs.real_pdf("libtasn1.pdf"))
    (root / "book.epub").write_bytes(Path(JA.root, "developers-reference.epub").read_bytes())
    (root / "index.html").write_text('<html lang="en"><head><title>Files</title></head><body><h1>Files</h1>'
                                     '<p>The libtasn1 manual, and a book.</p><a href="/manual.pdf">manual</a> '
                                     '<a href="/book.epub">book</a></body></html>')


def _crawl(tmp: Path, nginx: NginxServer, name: str, seeds: list[str], extra: list[str], **settings) -> tuple:
    (tmp / f"{name}.seeds").write_text("".join(seeds))
    result = run_crawl("web", tmp / name, args={"seeds": str(tmp / f"{name}.seeds")}, extra=extra, settings={
        "HOST_RESOLVE": docsites.HOST_RESOLVE, "ALLOWED_DOMAINS": docsites.DOMAIN, "MIN_INTERVAL": 0,
        "RENDER_MODE": "never", "MAX_PAGES_PER_HOST": PG_PAGES, "STORE_URI": f"sqlite:///{tmp}/{name}.db", **settings})
    assert result.returncode == 0, result.log[-3000:]
    assert not error_lines(result.log) and "Traceback" not in result.log, result.log[-3000:]
    return tmp / f"{name}.db", result


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    docsites.ensure_installed((JA, PG))
    pdfs.ensure_installed()
    tmp = tmp_path_factory.mktemp("exports")
    _files_site(tmp / "files")
    with NginxServer({JA.name: JA.root, PG.name: PG.root, "files.docs.test": str(tmp / "files")}) as nginx:
        seeds = [f"http://{s.name}:{nginx.port}{s.start}\n" for s in (JA, PG)]
        files = f"http://files.docs.test:{nginx.port}/index.html\n"
        main = _crawl(tmp, nginx, "crawl", [*seeds, files], [arg for fmt in FEEDS
                                                            for arg in ("-O", str(tmp / f"pages.{fmt}"))])
        fields = _crawl(tmp, nginx, "fields", [files], ["-O", str(tmp / "fields.jsonl")],
                        FEED_EXPORT_FIELDS="title,url,body_encoding,body,content_type")
    yield tmp, main, fields


def scrapy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=PROJECT_DIR, capture_output=True, text=True,
                          timeout=300)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_feed_holds_one_record_per_stored_page_with_its_text(crawled):
    tmp, (db, result), _ = crawled
    conn = sqlite3.connect(db)
    stored = {url for (url,) in conn.execute("SELECT url FROM pages")}
    assert len(stored) >= PG_PAGES + 10
    for fmt in FEEDS:  # Scrapy's own count is of pages: no fetch errors, skips or sitemaps in a feed
        assert f"Stored {fmt} feed ({len(stored)} items) in: {tmp}/pages.{fmt}" in result.log
    assert "is not JSON serializable" not in result.log
    records = lines(tmp / "pages.jsonl")
    assert {r["url"] for r in records} == stored and all(tuple(r) == DEFAULT_FIELDS for r in records)
    html = [r for r in records if r["content_type"].startswith("text/html")]
    assert all(r["markdown"] and r["title"] for r in html)  # (a contents page's text may be empty: its title is not)
    assert sum(bool(r["text"]) for r in html) >= 0.85 * len(html)
    assert all(r["fetched_at"].endswith("Z") and "T" in r["fetched_at"] for r in records)
    maintenance = next(r for r in records if r["url"].endswith("/maintenance.html"))
    assert "periodic “vacuuming” of the database" in maintenance["text"]
    assert {r["language"] for r in records if "devref-ja" in r["url"] and r["content_type"].startswith("text/html")} \
        == {"ja"}
    assert {"url": maintenance["url"].replace("maintenance.html", "routine-vacuuming.html"), "anchor":
            "25.1. Routine Vacuuming", "nofollow": False} in maintenance["links"]
    assert all(r["warc_file"] and r["warc_offset"] is not None for r in records if not r["duplicate_of"])
    # The same records in CSV (links as JSON text), XML and Parquet.
    rows = list(csv.DictReader((tmp / "pages.csv").open(encoding="utf-8")))
    assert [row["url"] for row in rows] == [r["url"] for r in records]
    assert json.loads(next(row for row in rows if row["url"] == maintenance["url"])["links"]) == maintenance["links"]
    items = ET.parse(tmp / "pages.xml").getroot().findall("item")
    assert [i.find("url").text for i in items] == [r["url"] for r in records]
    import duckdb

    assert duckdb.sql(f"SELECT count(*) FROM '{tmp}/pages.parquet'").fetchall() == [(len(records),)]


def test_scrapy_export_gives_the_feeds_records_from_the_store(crawled, tmp_path):
    tmp, (db, _), _ = crawled
    run = scrapy("export", "--store", f"sqlite:///{db}", "--format", "jsonl", "--out", str(tmp_path / "x.jsonl"))
    assert run.returncode == 0, run.stderr[-2000:]
    said = json.loads(run.stdout.strip().splitlines()[-1])
    exported = {r["url"]: r for r in lines(tmp_path / "x.jsonl")}
    assert said["pages"] == len(exported) and said["out"] == str(tmp_path / "x.jsonl")
    assert exported == {r["url"]: r for r in lines(tmp / "pages.jsonl")}
    picked = scrapy("export", "--store", f"sqlite:///{db}", "--fields", "status,url", "--out", "-")
    assert [list(r) for r in map(json.loads, picked.stdout.splitlines())] == [["status", "url"]] * len(exported)
    refused = scrapy("export", "--store", f"sqlite:///{db}", "--fields", "url,body")
    assert refused.returncode != 0 and "body is not in the store" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_the_parquet_export_reads_back_in_duckdb_with_every_pages_text_and_markdown(crawled, tmp_path):
    import duckdb

    tmp, (db, _), _ = crawled
    out = tmp_path / "pages.parquet"
    run = scrapy("export", "--store", f"sqlite:///{db}", "--format", "parquet", "--out", str(out))
    assert run.returncode == 0, run.stderr[-2000:]
    types = dict(duckdb.sql(f"DESCRIBE SELECT * FROM '{out}'").fetchall()[i][:2] for i in range(len(DEFAULT_FIELDS)))
    assert types["fetched_at"] == "TIMESTAMP WITH TIME ZONE" and types["warc_offset"] == "BIGINT"
    assert types["links"] == "STRUCT(url VARCHAR, anchor VARCHAR, nofollow BOOLEAN)[]"
    conn = sqlite3.connect(db)
    rows = duckdb.sql(f"SELECT url, text, markdown FROM '{out}'").fetchall()
    assert len(rows) == conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    with_text = 0
    for url, text, markdown in rows:
        content = read(conn, url)
        assert (text, markdown) == ((content.text, content.markdown) if content else (None, None)), url
        with_text += bool(text)
    assert with_text >= 0.85 * len(rows)
    japanese = duckdb.sql(f"SELECT count(*) FROM '{out}' WHERE url LIKE '%devref-ja%' AND text LIKE '%パッケージ%'")
    assert japanese.fetchall()[0][0] >= 5


def test_the_wet_export_refers_each_text_to_its_response_record(crawled, tmp_path):
    tmp, (db, _), _ = crawled
    out = tmp_path / "crawl.warc.wet.gz"
    run = scrapy("export", "--store", f"sqlite:///{db}", "--format", "wet", "--out", str(out))
    assert run.returncode == 0, run.stderr[-2000:]
    responses = {}
    for path in (tmp / "warc").glob("*.warc.gz"):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type == "response":
                    h = record.rec_headers
                    responses[h.get_header("WARC-Record-ID")] = h.get_header("WARC-Target-URI")
    conn = sqlite3.connect(db)
    texts = {}
    with open(out, "rb") as fh:
        records = iter(ArchiveIterator(fh))
        assert next(records).rec_type == "warcinfo"
        for record in records:
            assert record.rec_type == "conversion"
            h = record.rec_headers
            assert h.get_header("WARC-Refers-To") in responses  # resolves to a response record
            assert h.get_header("WARC-Date") and h.get_header("Content-Type") == "text/plain; charset=utf-8"
            texts[h.get_header("WARC-Target-URI")] = record.content_stream().read().decode("utf-8")
    with_text = {url: read(conn, url).text for (url,) in conn.execute("SELECT url FROM pages")
                 if read(conn, url) and read(conn, url).text}
    final = dict(conn.execute("SELECT url, COALESCE(final_url, url) FROM pages"))
    assert {final[u]: t for u, t in with_text.items()} == texts


def test_scrapy_search_ranks_pages_with_highlighted_snippets_in_english_and_japanese(crawled):
    _, (db, _), _ = crawled
    run = scrapy("search", "vacuum", "--store", f"sqlite:///{db}", "--limit", "5")
    assert run.returncode == 0, run.stderr[-2000:]
    results = [r.splitlines() for r in run.stdout.strip().split("\n\n")]  # title, URL, snippet each
    assert len(results) >= 3 and [r[0].split(".", 1)[0] for r in results] == [str(n + 1) for n in range(len(results))]
    assert "Routine Database Maintenance Tasks" in "".join(r[0] for r in results[:3]), run.stdout
    assert all(r[1].strip().startswith("http://postgresql.docs.test") for r in results)
    assert all(re.search(r"\*\*vacuum\w*\*\*", r[2], re.I) for r in results), run.stdout
    hits = [json.loads(line) for line in scrapy("search", "パッケージ", "--store", f"sqlite:///{db}", "--json").stdout
            .splitlines()]
    assert len(hits) >= 5 and all("devref-ja" in h["url"] for h in hits)
    for hit in hits:  # each highlight is the query's text in the snippet
        assert hit["highlights"] and all(hit["snippet"][a:b] == "パッケージ" for a, b in hit["highlights"])
    two = [json.loads(line) for line in scrapy("search", "作成", "--store", f"sqlite:///{db}", "--json").stdout
           .splitlines()]
    assert two and all("devref-ja" in h["url"] for h in two)  # two kanji inside a run
    none = scrapy("search", "zyzzyvaqq", "--store", f"sqlite:///{db}")
    assert none.returncode == 0 and none.stdout == "" and "no page matches" in none.stderr


def test_the_pdf_keeps_its_document_text_and_gets_its_content_like_any_page(crawled):
    _, (db, _), _ = crawled
    conn = sqlite3.connect(db)
    (url,) = conn.execute("SELECT url FROM pages WHERE url LIKE '%/manual.pdf'").fetchone()
    (document,) = conn.execute("SELECT text FROM documents WHERE url = ?", (url,)).fetchone()
    content = read(conn, url)
    assert "libtasn1" in document and content is not None and "libtasn1" in content.text


def test_feed_export_fields_chooses_the_fields_and_bodies_come_as_text_or_base64(crawled):
    tmp, _, (db, result) = crawled
    records = {r["url"].rsplit("/", 1)[1]: r for r in lines(tmp / "fields.jsonl")}
    assert all(list(r) == ["title", "url", "body_encoding", "body", "content_type"] for r in records.values())
    assert set(records) == {"index.html", "manual.pdf", "book.epub"}
    assert records["index.html"]["body_encoding"] == "text"
    assert records["index.html"]["body"] == (tmp / "files" / "index.html").read_text()
    for name in ("manual.pdf", "book.epub"):
        assert records[name]["body_encoding"] == "base64"
        assert base64.b64decode(records[name]["body"]) == (tmp / "files" / name).read_bytes()


def test_the_wacz_lists_each_pages_text_for_replay_search(crawled, tmp_path):
    tmp, (db, _), _ = crawled
    out = tmp_path / "crawl.wacz"
    run = scrapy("wacz", "--store", f"sqlite:///{db}", "--out", str(out))
    assert run.returncode == 0, run.stderr[-2000:]
    check = subprocess.run([os.path.join(os.path.dirname(sys.executable), "wacz"), "validate", "-f", str(out)],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    with zipfile.ZipFile(out) as z:
        header, *pages = [json.loads(line) for line in z.read("pages/pages.jsonl").splitlines()]
        index = {json.loads(line.split(b" ", 2)[2])["url"] for line in gzip.decompress(z.read("indexes/index.cdx.gz"))
                 .splitlines()}
    assert header["hasText"] is True and pages and all(p["ts"] and p["id"] for p in pages)
    conn = sqlite3.connect(db)
    by_url = dict(conn.execute("SELECT COALESCE(final_url, url), url FROM pages"))
    assert {p["url"] for p in pages} <= index
    assert all(p.get("text", "") == (read(conn, by_url[p["url"]]).text if read(conn, by_url[p["url"]]) else "")
               for p in pages)
    assert sum(bool(p.get("text")) for p in pages) >= 0.85 * len(pages)


def test_a_feed_that_cannot_be_written_stops_the_crawl_at_its_start_in_one_line(tmp_path):
    (tmp_path / "a-file").write_text("")
    cases = {f"{tmp_path}/a-file is a file, so": ["-O", str(tmp_path / "a-file" / "out" / "pages.jsonl")],
             "unknown format 'txt'": ["-s", "FEEDS=" + json.dumps({str(tmp_path / "p.txt"): {"format": "txt"}})]}
    for expected, option in cases.items():
        run = scrapy("crawl", "site", "-a", "url=http://127.0.0.1:9/", "-s", "PROFILE=sandbox", "-s", "LAST_CRAWL_FILE=",
                     "-s", f"STORE_URI=sqlite:///{tmp_path}/c.db", *option)
        said = [line for line in run.stderr.splitlines() if line.startswith("crawlproj:")]
        assert run.returncode == 2 and len(said) == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
        assert said[0].startswith("crawlproj: setting FEEDS=") and expected in said[0], said
    assert not (tmp_path / "c.db").exists()  # nothing started


def test_scrapy_export_reads_a_crawls_shards_together_given_by_a_pattern(tmp_path):
    """As the shards of a WORKERS or distributed crawl: a URL both stored is exported once, its latest fetch."""
    from crawlproj.items import PageContent
    from crawlproj.items import PageItem
    from crawlproj.store import open_store

    for n in (1, 2):
        store = open_store(f"sqlite:///{tmp_path}/workers/worker{n}/crawl.db")
        for url in ("http://a.test/", f"http://a.test/{n}"):
            store.add_page(PageItem(url=url, final_url=url, host="a.test", status=200, content_type="text/html",
                                    charset="utf-8", fetched_at=float(n), fetch_duration=0.1, bytes=1, content_hash="",
                                    title=None, depth=0, content=PageContent(text=f"fetched by worker{n}")))
        store.commit()
        store.close()
    run = scrapy("export", "--store", f"sqlite:///{tmp_path}/workers/*/crawl.db", "--out", "-", "--fields", "url,text")
    assert run.returncode == 0, run.stderr[-2000:]
    assert sorted(map(json.loads, run.stdout.splitlines()), key=lambda r: r["url"]) == [
        {"url": "http://a.test/", "text": "fetched by worker2"}, {"url": "http://a.test/1", "text": "fetched by worker1"},
        {"url": "http://a.test/2", "text": "fetched by worker2"}]
    assert run.stderr.count("reading the crawl in") == 2
