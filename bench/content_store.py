"""What keeping pages' content costs, and how fast a crawl's pages are exported, on real pages.

Five real documentation sites from Debian packages (sandbox.docsites, about 6,200 pages) are
served by nginx on loopback and crawled CPU-bound with every default on (the content stage,
CONTENT_STORE, CONTENT_MARKDOWN, CONTENT_SEARCH). Then, from that crawl's stored content:

* ``store``: bytes per page of the content rows with Markdown, without it (text only), and of
  the search index, each built anew in a store of its own from the same contents (SQLite's
  dbstat: the pages' bytes of each table and index), beside the raw UTF-8 of the text and
  Markdown, the rest of the store (pages, links, ...) and the WARC files;
* ``cpu``: CPU microseconds per page of compressing text and Markdown (zstd) and of indexing
  (FTS5, with the CJK bigrams and the commit of each batch of 200 pages);
* ``search``: the median time of a few ``scrapy search`` queries;
* ``export``: ``scrapy export`` as JSON lines, Parquet and WET of the crawl's store and of a store
  of the same pages ``--times`` over (as many more pages): pages per second and each process's
  peak RSS (memory stays flat if the second is no larger than the first).

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crawlproj.store import content, search  # noqa: E402
from crawlproj.store.sqlite import PAGE_COLUMNS, SqliteStore  # noqa: E402
from sandbox.docsites import DOMAIN, HOST_RESOLVE, SITES, TEST_SITES, ensure_installed  # noqa: E402
from sandbox.harness import run_crawl, with_peak_rss  # noqa: E402
from sandbox.servers import NginxServer  # noqa: E402

QUERIES = ("vacuum", "asyncio event loop", "template", "constructor", "select", "stream pipe")
BATCH = 200  # the store's batch (STORE_BATCH_SIZE)


def crawl(sites: tuple, work: Path, max_pages: int) -> tuple[Path, dict]:
    with NginxServer({s.name: s.root for s in sites}) as nginx:
        seeds = work / "seeds.txt"
        seeds.write_text("".join(f"http://{s.name}:{nginx.port}{s.start}\n" for s in sites))
        result = run_crawl("web", work / "crawl", args={"seeds": str(seeds)}, timeout=3600, settings={
            "HOST_RESOLVE": HOST_RESOLVE, "ALLOWED_DOMAINS": DOMAIN, "STORE_URI": f"sqlite:///{work}/crawl.db",
            "MIN_INTERVAL": 0, "INTERVAL_DURATION_FACTOR": 0, "WASEDA_INTERVAL_ENABLED": False,
            "KEEPALIVE_CLOSE_PAUSE": 0, "CONCURRENT_REQUESTS": 16, "RENDER_MODE": "never", "LOG_LEVEL": "WARNING",
            "DASHBOARD_ENABLED": False, "MAX_PAGES_PER_HOST": max_pages})
    if result.returncode != 0:
        raise SystemExit(f"crawl failed ({result.returncode}): {result.log[-3000:]}")
    return work / "crawl.db", result.stats


def contents(db: Path):
    """(url, PageContent) of every stored page with content."""
    conn = sqlite3.connect(db)
    columns = ", ".join((*content.META_COLUMNS, "text", "markdown"))
    for url, *row in conn.execute(f"SELECT url, {columns} FROM page_content ORDER BY rowid"):
        yield url, content.from_row(tuple(row))
    conn.close()


def table_bytes(conn: sqlite3.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"))


def rebuild(db: Path, path: Path, markdown: bool, index: bool) -> dict:
    """The crawl's contents written anew as the store writes them (batches of BATCH pages), with
    or without Markdown and the index: their bytes, and the CPU seconds of compressing (pack_s)
    and of everything else the writes took, commits included (store_s)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(content.SCHEMA + search.SCHEMA)
    cur = conn.cursor()
    spent = {"pack_s": 0.0, "store_s": 0.0}

    def timed(kind: str, fn, *args):  # noqa: ANN001, ANN202
        t = time.process_time()
        result = fn(*args)
        spent[kind] += time.process_time() - t
        return result

    insert = (f"INSERT INTO page_content (url, {', '.join(content.ROW_COLUMNS)}, indexed) "
              f"VALUES ({', '.join('?' * (len(content.ROW_COLUMNS) + 2))})")
    n = 0
    for url, page in contents(db):
        if n % BATCH == 0:
            if n:
                timed("store_s", cur.execute, "COMMIT")
            cur.execute("BEGIN")
        text = timed("pack_s", content.pack, page.text)
        md = timed("pack_s", content.pack, page.markdown) if markdown and page.markdown else None
        timed("store_s", cur.execute, insert, (url, page.title, page.description, page.language, page.canonical_url,
                                               page.author, page.published, page.modified, page.limited, len(page.text),
                                               len(page.markdown) if markdown else 0, text, md, int(index)))
        if index:
            timed("store_s", search.add, cur, cur.lastrowid, page.title, page.text)
        n += 1
    timed("store_s", cur.execute, "COMMIT")
    sizes = table_bytes(conn)
    conn.close()
    return {"pages": n, **spent,
            "content_bytes": sizes.get("page_content", 0) + sizes.get("sqlite_autoindex_page_content_1", 0),
            "index_bytes": sum(v for k, v in sizes.items() if k.startswith("page_search"))}


def multiply(db: Path, out: Path, times: int) -> int:
    """A store of the crawl's pages, content and links ``times`` over (URLs made distinct)."""
    SqliteStore(str(out)).close()
    conn = sqlite3.connect(out, isolation_level=None)
    conn.execute("ATTACH DATABASE ? AS s", (str(db),))
    rest = ", ".join(PAGE_COLUMNS[1:])
    content_columns = ", ".join((*content.ROW_COLUMNS, "indexed"))
    conn.execute("BEGIN")
    for k in range(times):
        conn.execute(f"INSERT INTO pages (url, {rest}) SELECT url || '#{k}', {rest} FROM s.pages")
        conn.execute(f"INSERT INTO page_content (url, {content_columns}) SELECT url || '#{k}', {content_columns} "
                     "FROM s.page_content")
        conn.execute("INSERT INTO links SELECT source || ?, target, anchor, nofollow, source_host, target_host "
                     "FROM s.links", (f"#{k}",))
    conn.execute("COMMIT")
    pages = conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    conn.close()
    return pages


def export(db: Path, fmt: str, out: Path) -> dict:
    """``scrapy export`` in a process of its own: its figures and its peak RSS."""
    proc = subprocess.Popen([sys.executable, "-m", "scrapy", "export", "--store", f"sqlite:///{db}", "--format", fmt,
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    stdout = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"scrapy export --format {fmt} failed ({proc.returncode})")
    said = json.loads(stdout.decode().strip().splitlines()[-1])
    return {"pages": said["pages"], "pages_per_s": said["pages_per_s"], "mb": round(said["bytes"] / 2**20, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024)}


def per_page(value: float, pages: int, scale: float = 1.0) -> float:
    return round(value * scale / pages, 1) if pages else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times", type=int, default=10,
                        help="the larger export's store: the crawl's pages so many times")
    parser.add_argument("--smoke", action="store_true", help="one small site, 40 pages (make test)")
    opts = parser.parse_args()
    sites, max_pages = SITES, 0
    if opts.smoke:
        sites, max_pages, opts.times = TEST_SITES[:1], 40, 2
    ensure_installed(sites)
    work = Path(tempfile.mkdtemp(prefix="bench-content-"))
    db, stats = crawl(sites, work, max_pages)
    conn = sqlite3.connect(db)
    pages = conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    with_content, text_bytes, md_bytes = conn.execute(
        "SELECT COUNT(*), SUM(text_chars), SUM(markdown_chars) FROM page_content").fetchone()
    raw_text = raw_md = 0
    for _, page in contents(db):
        raw_text += len(page.text.encode("utf-8"))
        raw_md += len(page.markdown.encode("utf-8"))
    sizes = table_bytes(conn)
    rest = sum(v for k, v in sizes.items()
               if not k.startswith(("page_content", "page_search", "sqlite_autoindex_page_content")))
    warc = sum(p.stat().st_size for p in (work / "warc").glob("*.warc.gz"))
    timings = {}
    for query in QUERIES:
        runs = []
        for _ in range(5):
            t = time.perf_counter()
            search.search(conn, query)
            runs.append(time.perf_counter() - t)
        timings[query] = round(1000 * statistics.median(runs), 2)
    conn.close()
    indexed = rebuild(db, work / "indexed.db", markdown=True, index=True)
    full = rebuild(db, work / "full.db", markdown=True, index=False)
    text_only = rebuild(db, work / "text.db", markdown=False, index=False)
    n = full["pages"]
    out = {
        "bench": "content_store", "sites": len(sites), "pages": pages, "pages_with_content": with_content,
        "crawl_seconds": stats.get("elapsed_time_seconds"),
        "store": {
            "raw_text_bytes_per_page": per_page(raw_text, n), "raw_markdown_bytes_per_page": per_page(raw_md, n),
            "content_bytes_per_page": per_page(full["content_bytes"], n),
            "content_bytes_per_page_text_only": per_page(text_only["content_bytes"], n),
            "search_index_bytes_per_page": per_page(indexed["index_bytes"], n),
            "rest_of_store_bytes_per_page": per_page(rest, pages), "warc_bytes_per_page": per_page(warc, pages),
            "compression_ratio": round((raw_text + raw_md) / max(1, full["content_bytes"]), 2),
            "chars_per_page": {"text": per_page(text_bytes or 0, n), "markdown": per_page(md_bytes or 0, n)},
        },
        "cpu": {"compress_us_per_page": per_page(full["pack_s"], n, 1e6),
                "compress_us_per_page_text_only": per_page(text_only["pack_s"], n, 1e6),
                "row_write_us_per_page": per_page(full["store_s"], n, 1e6),
                "index_us_per_page": per_page(indexed["store_s"] - full["store_s"], n, 1e6)},
        "search_ms": timings,
        "export": {},
    }
    big = work / "times.db"
    out["export"]["times"] = opts.times
    out["export"]["times_pages"] = multiply(db, big, opts.times)
    for fmt in ("jsonl", "parquet", "wet"):
        out["export"][fmt] = export(db, fmt, work / f"out.{fmt}")
        out["export"][f"{fmt}_times"] = export(big, fmt, work / f"times.{fmt}")
    print(json.dumps(with_peak_rss(out)))


if __name__ == "__main__":
    main()
