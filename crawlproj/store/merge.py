"""Reading the shards of a distributed crawl together: one database from many (pure SQLite)."""

from __future__ import annotations

import os
from collections.abc import Callable

from . import content
from .sqlite import PAGE_COLUMNS, SqliteStore


def merge_shards(out: str, shards: list[str], tick: Callable[[int], object] | None = None) -> dict:
    """Merge worker shards into the store at ``out`` (created if missing); return counts.

    A URL stored by two workers (fetched again after a worker died before its commit)
    keeps its latest fetch, with that fetch's content and search entry; host counters add up;
    links and duplicates are unioned.
    ``tick(1)`` is called after each shard (a progress bar's update).
    """
    store = SqliteStore(out)
    conn = store.conn
    columns = ", ".join(PAGE_COLUMNS)
    merged = 0
    for shard in shards:
        if os.path.abspath(shard) == os.path.abspath(out):
            continue
        conn.execute("ATTACH DATABASE ? AS shard", (shard,))
        try:
            if not conn.execute("SELECT 1 FROM shard.sqlite_master WHERE name = 'pages'").fetchone():
                raise ValueError(f"{shard} is not a crawl store (it has no pages table)")
            # A shard from an older version lacks the newer columns: NULL there.
            present = {row[1] for row in conn.execute("PRAGMA shard.table_info(pages)")}
            selected = ", ".join(c if c in present else "NULL" for c in PAGE_COLUMNS)
            conn.execute("BEGIN")
            conn.execute(f"""INSERT INTO pages ({columns}) SELECT {selected} FROM shard.pages WHERE true
                             ON CONFLICT(url) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in PAGE_COLUMNS[1:])}
                             WHERE excluded.fetched_at > pages.fetched_at""")
            conn.execute("INSERT OR IGNORE INTO links SELECT * FROM shard.links")
            conn.execute("INSERT OR REPLACE INTO duplicates SELECT * FROM shard.duplicates")
            conn.execute("INSERT INTO fetch_errors SELECT * FROM shard.fetch_errors")
            conn.execute("""INSERT INTO hosts SELECT * FROM shard.hosts WHERE true ON CONFLICT(name) DO UPDATE SET
                            ip = COALESCE(excluded.ip, ip), robots_status = COALESCE(excluded.robots_status, robots_status),
                            robots_fetched_at = MAX(COALESCE(excluded.robots_fetched_at, 0), COALESCE(robots_fetched_at, 0)),
                            fetches = fetches + excluded.fetches, errors = errors + excluded.errors,
                            bytes = bytes + excluded.bytes""")
            conn.execute("""INSERT INTO host_errors SELECT * FROM shard.host_errors WHERE true
                            ON CONFLICT(host, kind) DO UPDATE SET count = count + excluded.count""")
            if conn.execute("SELECT 1 FROM shard.sqlite_master WHERE name = 'render_hosts'").fetchone():
                # Each worker judged a host on its own pages: the evidence adds up, and the
                # mode is that of the worker that saw the host most.
                conn.execute("""INSERT INTO render_hosts SELECT * FROM shard.render_hosts WHERE true
                                ON CONFLICT(host) DO UPDATE SET
                                mode = CASE WHEN excluded.comparisons > comparisons THEN excluded.mode ELSE mode END,
                                reason = CASE WHEN excluded.comparisons > comparisons THEN excluded.reason ELSE reason END,
                                comparisons = comparisons + excluded.comparisons, gains = gains + excluded.gains,
                                missed = missed + excluded.missed, overreached = overreached + excluded.overreached""")
            if conn.execute("SELECT 1 FROM shard.sqlite_master WHERE name = 'documents'").fetchone():
                # a document's text goes with its page: the latest fetch's
                conn.execute("""INSERT OR REPLACE INTO documents SELECT d.* FROM shard.documents d
                                JOIN shard.pages p ON p.url = d.url JOIN pages m ON m.url = d.url
                                WHERE m.fetched_at = p.fetched_at""")
            if conn.execute("SELECT 1 FROM shard.sqlite_master WHERE name = 'page_content'").fetchone():
                _merge_content(conn)
            if conn.execute("SELECT 1 FROM shard.sqlite_master WHERE name = 'sitemap_urls'").fetchone():
                # The newest reading of a URL's sitemap entry, and of a subject's AI-use signals, wins.
                conn.execute("""INSERT INTO sitemap_urls SELECT * FROM shard.sitemap_urls WHERE true
                                ON CONFLICT(url) DO UPDATE SET sitemap = excluded.sitemap, lastmod = excluded.lastmod,
                                changefreq = excluded.changefreq, priority = excluded.priority,
                                read_at = excluded.read_at WHERE excluded.read_at > sitemap_urls.read_at""")
                conn.execute("""INSERT INTO ai_signals SELECT * FROM shard.ai_signals WHERE true
                                ON CONFLICT(subject, source, name) DO UPDATE SET value = excluded.value,
                                at = excluded.at WHERE excluded.at > ai_signals.at""")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.execute("DETACH DATABASE shard")
        merged += 1
        if tick is not None:
            tick(1)
    pages = conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    hosts = conn.execute("SELECT COUNT(*) FROM hosts").fetchone()[0]
    store.close()
    return {"out": out, "shards": merged, "pages": pages, "hosts": hosts}


def _merge_content(conn) -> None:  # noqa: ANN001 - the merge's connection, the shard attached
    """Each page's content as its latest fetch had it (none, when that fetch had none), indexed
    for search as it was in the shard (content.replace_row: the old entry out, the new one in)."""
    cur = conn.cursor()
    columns = ", ".join(f"c.{c}" for c in content.ROW_COLUMNS)
    rows = conn.execute(f"""SELECT p.url, c.url IS NOT NULL, c.indexed, {columns} FROM shard.pages p
                            JOIN pages m ON m.url = p.url AND m.fetched_at = p.fetched_at
                            LEFT JOIN shard.page_content c ON c.url = p.url""")
    for url, has_content, indexed, *values in rows:
        text = content.unpack(values[content.ROW_COLUMNS.index("text")]) if has_content and indexed else None
        content.replace_row(cur, url, tuple(values) if has_content else None, text)
