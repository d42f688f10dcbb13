"""SQLite store: pages, links, hosts and fetch errors, written in batches.

Pure storage, no Scrapy. Rows are buffered and written by :meth:`commit` in one
transaction. The database runs in WAL mode, so a kill -9 at any moment leaves it
consistent: committed batches are kept whole and the open batch is lost whole.
"""

from __future__ import annotations

import os
from collections import Counter
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from ..items import FetchError, PageItem
from .content import SCHEMA as CONTENT_SCHEMA
from .content import ContentPolicy
from .content import put as put_content
from .changes import SCHEMA as CHANGES_SCHEMA
from .changes import put_change, put_snapshot
from .search import SCHEMA as SEARCH_SCHEMA

SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    url TEXT PRIMARY KEY,        -- canonical URL as requested
    final_url TEXT,              -- after redirects
    host TEXT NOT NULL,
    status INTEGER,
    content_type TEXT,
    charset TEXT,
    fetched_at REAL,             -- unix time
    fetch_duration REAL,         -- seconds, request sent to response received
    bytes INTEGER,
    content_hash TEXT,           -- sha256 of the body
    title TEXT,
    text_length INTEGER,
    depth INTEGER,               -- hops from the seed
    warc_file TEXT,              -- the WARC file holding the capture (NULL: not archived)
    warc_offset INTEGER,         -- where its record starts in that file
    rendered INTEGER DEFAULT 0,  -- 1: the body is the DOM after scripts ran in the browser
    language TEXT                -- the language the page declares (<html lang>, ...), primary subtag; '' none
);
CREATE INDEX IF NOT EXISTS pages_host ON pages(host);
CREATE TABLE IF NOT EXISTS links (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    anchor TEXT NOT NULL DEFAULT '',
    nofollow INTEGER NOT NULL DEFAULT 0,
    source_host TEXT NOT NULL,
    target_host TEXT NOT NULL,
    PRIMARY KEY (source, target, anchor)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_target ON links(target);
CREATE TABLE IF NOT EXISTS hosts (
    name TEXT PRIMARY KEY,
    ip TEXT,
    robots_status INTEGER,       -- HTTP status of robots.txt; NULL when unreachable or not yet fetched
    robots_fetched_at REAL,
    fetches INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    bytes INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS fetch_errors (
    url TEXT NOT NULL,
    host TEXT NOT NULL,
    kind TEXT NOT NULL,
    message TEXT,
    depth INTEGER,
    at REAL
);
CREATE TABLE IF NOT EXISTS render_hosts (    -- each host's rendering mode and its evidence (the last word)
    host TEXT PRIMARY KEY,
    mode TEXT NOT NULL,                       -- rule | render | static
    comparisons INTEGER NOT NULL,             -- pages seen both ways, static and rendered
    gains INTEGER NOT NULL,                   -- ... of which rendering showed more
    missed INTEGER NOT NULL,                  -- judged static, showed more when rendered
    overreached INTEGER NOT NULL,             -- judged dynamic, showed nothing more
    reason TEXT NOT NULL DEFAULT ''           -- why the mode was last set
);
CREATE TABLE IF NOT EXISTS host_errors (    -- every failed attempt, retries included
    host TEXT NOT NULL,
    kind TEXT NOT NULL,                       -- dns | timeout | connection | http_5xx
    count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (host, kind)
);
CREATE TABLE IF NOT EXISTS duplicates (      -- pages whose main text copies a canonical page
    url TEXT PRIMARY KEY,
    canonical TEXT NOT NULL,
    kind TEXT NOT NULL,                       -- exact | near
    jaccard REAL NOT NULL                     -- estimated (1.0 for exact)
);
CREATE INDEX IF NOT EXISTS duplicates_canonical ON duplicates(canonical);
CREATE TABLE IF NOT EXISTS sitemap_urls (    -- what the sitemaps say of each URL (the last sitemap read)
    url TEXT PRIMARY KEY,                     -- canonical
    host TEXT NOT NULL,
    sitemap TEXT NOT NULL,                    -- the sitemap that listed it
    lastmod REAL,                             -- unix time, from <lastmod>
    changefreq TEXT,                          -- as written: recorded, not trusted
    priority REAL,                            -- as written: recorded, not trusted
    read_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ai_signals (      -- what publishers say of AI use (crawlproj.politeness.ai_signal_rules)
    subject TEXT NOT NULL,                    -- a host (from robots.txt, tdmrep.json) or a page URL
    source TEXT NOT NULL,                     -- robots.txt | tdmrep.json | header
    name TEXT NOT NULL,                       -- search, ai-input, ai-train (Content-Signal); tdm-reservation, tdm-policy
    value TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (subject, source, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS documents (       -- pages that are documents, not HTML: what was read of them
    url TEXT PRIMARY KEY,
    kind TEXT NOT NULL,                       -- pdf
    pages INTEGER,                            -- pages in the file
    pages_read INTEGER,                       -- ... read (PDF_MAX_PAGES)
    author TEXT,
    outcome TEXT,                             -- NULL: read whole; else pdf_encrypted | pdf_malformed | over_budget/... | timeout
    text TEXT NOT NULL                        -- its text, a form feed between pages (the title is the page's)
) WITHOUT ROWID;
CREATE VIEW IF NOT EXISTS host_links AS
    SELECT source_host, target_host, COUNT(*) AS links
    FROM links GROUP BY source_host, target_host;
"""


PAGE_COLUMNS = ("url", "final_url", "host", "status", "content_type", "charset", "fetched_at", "fetch_duration",
                "bytes", "content_hash", "title", "text_length", "depth", "warc_file", "warc_offset", "rendered",
                "language")


def use_wal(conn: sqlite3.Connection) -> None:
    """Put ``conn``'s file in WAL mode. Processes that open one file at the same moment (the
    workers of a WORKERS crawl) can see the switch fail at once with "database is locked":
    SQLite does not always wait its busy timeout for it, so it is tried again for up to 5 s."""
    for attempt in range(100):
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError:
            if attempt == 99:
                raise
            time.sleep(0.05)


def connect(path: str) -> sqlite3.Connection:
    """A connection to the SQLite file at ``path`` (its directory created) in WAL mode."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    use_wal(conn)
    # NORMAL in WAL mode: a committed transaction survives a process crash;
    # only a power cut can take back the last ones.
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=10000")
    return conn


@dataclass
class StoreBatch:
    """Rows taken from the store's buffers, written together in one transaction."""

    pages: list[PageItem]
    errors: list[FetchError]
    robots: dict[str, tuple[int | None, float]]
    skipped: list[str]
    host_errors: Counter[tuple[str, str]]
    render_hosts: dict[str, dict] = field(default_factory=dict)
    sitemap_urls: list[tuple] = field(default_factory=list)  # rows of sitemap_urls
    ai_signals: dict[tuple[str, str], tuple[dict[str, str], float]] = field(default_factory=dict)


class SqliteStore:
    """Buffered writer (and small reader) for one SQLite crawl database. ``content`` says what
    it keeps of each page's content (:mod:`crawlproj.store.content`)."""

    def __init__(self, path: str, content: ContentPolicy = ContentPolicy()) -> None:
        self.path = path
        self.content = content
        self.conn = connect(path)
        # (The content and search tables are created in databases from before them too.)
        self.conn.executescript(SCHEMA + CONTENT_SCHEMA + SEARCH_SCHEMA + CHANGES_SCHEMA)
        columns = {row[1] for row in self.conn.execute("PRAGMA table_info(pages)")}
        for column, kind in (("warc_file", "TEXT"), ("warc_offset", "INTEGER"), ("rendered", "INTEGER DEFAULT 0"),
                             ("language", "TEXT")):  # databases from older versions
            if column not in columns:
                self.conn.execute(f"ALTER TABLE pages ADD COLUMN {column} {kind}")
        self._pages: list[PageItem] = []
        self._errors: list[FetchError] = []
        self._skipped: list[str] = []
        self._host_errors: Counter[tuple[str, str]] = Counter()
        self._robots: dict[str, tuple[int | None, float]] = {}
        self._render_hosts: dict[str, dict] = {}
        self._sitemap_urls: list[tuple] = []
        self._ai_signals: dict[tuple[str, str], tuple[dict[str, str], float]] = {}  # (subject, source) -> values
        self.commits = 0

    @property
    def pending(self) -> int:
        return len(self._pages) + len(self._errors) + len(self._skipped)

    def add_page(self, page: PageItem) -> None:
        self._pages.append(replace(page, body=b"", response_headers=[], request_headers=[]) if page.body else page)

    def add_error(self, error: FetchError) -> None:
        self._errors.append(error)

    def add_skipped(self, url: str) -> None:
        """A URL with nothing to store that still counts as completed once this batch commits."""
        self._skipped.append(url)

    def add_host_error(self, host: str, kind: str) -> None:
        self._host_errors[(host, kind)] += 1

    def set_robots(self, host: str, status: int | None, at: float) -> None:
        self._robots[host] = (status, at)

    def set_render_host(self, host: str, row: dict) -> None:
        """A host's rendering mode and evidence (:data:`crawlproj.signals.render_evidence`)."""
        self._render_hosts[host] = row

    def add_sitemap_urls(self, sitemap: str, entries: Iterable, at: float) -> None:
        """A sitemap's entries (:class:`crawlproj.content.sitemaps.SitemapEntry`, canonical ``loc``)."""
        self._sitemap_urls.extend((e.loc, _host(e.loc), sitemap, e.lastmod, e.changefreq, e.priority, at)
                                  for e in entries)

    def set_ai_signals(self, subject: str, source: str, values: dict[str, str], at: float) -> None:
        """What ``source`` says of AI use for ``subject`` (a host or a page URL): replaces what
        it said before (nothing, when ``values`` is empty)."""
        self._ai_signals[(subject, source)] = (dict(values), at)

    def take(self) -> StoreBatch | None:
        """Everything buffered, as one batch for :meth:`write` (None: nothing is)."""
        if not (self._pages or self._errors or self._robots or self._skipped or self._host_errors
                or self._render_hosts or self._sitemap_urls or self._ai_signals):
            return None
        batch = StoreBatch(self._pages, self._errors, self._robots, self._skipped, self._host_errors,
                           self._render_hosts, self._sitemap_urls, self._ai_signals)
        self._pages, self._errors, self._robots, self._skipped = [], [], {}, []
        self._host_errors, self._render_hosts, self._sitemap_urls, self._ai_signals = Counter(), {}, [], {}
        return batch

    def restore(self, batch: StoreBatch) -> None:
        """Put a batch whose write failed back in front of the buffers: nothing is lost if
        the next attempt succeeds."""
        self._pages, self._errors = batch.pages + self._pages, batch.errors + self._errors
        self._skipped = batch.skipped + self._skipped
        self._host_errors.update(batch.host_errors)
        self._robots = {**batch.robots, **self._robots}
        self._render_hosts = {**batch.render_hosts, **self._render_hosts}
        self._sitemap_urls = batch.sitemap_urls + self._sitemap_urls
        self._ai_signals = {**batch.ai_signals, **self._ai_signals}

    def commit(self) -> list[str]:
        """Write everything buffered in one transaction; return the URLs it completed."""
        batch = self.take()
        if batch is None:
            return []
        try:
            return self.write(batch)
        except BaseException:
            self.restore(batch)
            raise

    def write(self, batch: StoreBatch) -> list[str]:
        """Write ``batch`` in one transaction (rolled back and raised on failure); return the
        URLs it completed. Touches no buffer, so it may run in another thread than ``add_*``."""
        pages, errors, robots, skipped, host_errors = (batch.pages, batch.errors, batch.robots, batch.skipped,
                                                       batch.host_errors)
        hosts: dict[str, list] = {}  # name -> [ip, fetches, errors, bytes]
        for p in pages:
            h = hosts.setdefault(p.host, [None, 0, 0, 0])
            h[0] = p.ip or h[0]
            h[1] += 1
            h[2] += p.status >= 400
            h[3] += p.bytes
        for e in errors:
            hosts.setdefault(e.host, [None, 0, 0, 0])[2] += 1
        # A 304 revisit confirms the stored capture: only its fetch time moves.
        current = [p for p in pages if p.not_modified]
        captured = [p for p in pages if not p.not_modified]
        try:
            cur = self.conn.cursor()
            cur.execute("BEGIN")
            cur.executemany(
                f"INSERT OR REPLACE INTO pages ({', '.join(PAGE_COLUMNS)}) VALUES ({', '.join('?' * len(PAGE_COLUMNS))})",
                [tuple(getattr(p, c) for c in PAGE_COLUMNS) for p in captured],
            )
            cur.executemany("UPDATE pages SET fetched_at = ?, fetch_duration = ? WHERE url = ?",
                            [(p.fetched_at, p.fetch_duration, p.url) for p in current])
            cur.executemany("DELETE FROM duplicates WHERE url = ?", [(p.url,) for p in captured])
            cur.executemany(
                "INSERT INTO duplicates VALUES (?,?,?,?)",
                [(p.url, p.duplicate_of, p.duplicate_kind, p.jaccard) for p in captured if p.duplicate_of],
            )
            for p in captured:  # its text and Markdown, and its search entry, replaced
                put_content(cur, p.url, p.content, self.content)
            for p in captured:  # what a revisit changed, and a watched page's watched content
                if p.change is not None:
                    put_change(cur, p.change)
                if p.watch_snapshot is not None:
                    put_snapshot(cur, p.watch_snapshot)
            cur.executemany("DELETE FROM documents WHERE url = ?", [(p.url,) for p in captured])
            cur.executemany(
                "INSERT INTO documents VALUES (?,?,?,?,?,?,?)",
                [(p.url, d.kind, d.pages, d.pages_read, d.author, d.outcome, d.text)
                 for p in captured if (d := p.document) is not None],
            )
            # A page fetched again (after a restart) replaces its old links.
            cur.executemany("DELETE FROM links WHERE source = ?", [(p.url,) for p in captured])
            cur.executemany(
                "INSERT OR IGNORE INTO links VALUES (?,?,?,?,?,?)",
                [
                    (p.url, target, anchor, int(nofollow), p.host, _host(target))
                    for p in captured
                    for target, anchor, nofollow in p.links
                ],
            )
            cur.executemany(
                "INSERT INTO fetch_errors VALUES (?,?,?,?,?,?)",
                [(e.url, e.host, e.kind, e.message, e.depth, e.at) for e in errors],
            )
            cur.executemany(
                """INSERT INTO hosts (name, ip, fetches, errors, bytes) VALUES (?,?,?,?,?)
                   ON CONFLICT(name) DO UPDATE SET ip = COALESCE(excluded.ip, ip),
                   fetches = fetches + excluded.fetches, errors = errors + excluded.errors,
                   bytes = bytes + excluded.bytes""",
                [(name, *values) for name, values in hosts.items()],
            )
            cur.executemany(
                """INSERT INTO hosts (name, robots_status, robots_fetched_at) VALUES (?,?,?)
                   ON CONFLICT(name) DO UPDATE SET robots_status = excluded.robots_status,
                   robots_fetched_at = excluded.robots_fetched_at""",
                [(host, status, at) for host, (status, at) in robots.items()],
            )
            cur.executemany(
                """INSERT INTO host_errors (host, kind, count) VALUES (?,?,?)
                   ON CONFLICT(host, kind) DO UPDATE SET count = count + excluded.count""",
                [(host, kind, n) for (host, kind), n in host_errors.items()],
            )
            cur.executemany(
                "INSERT OR REPLACE INTO render_hosts VALUES (?,?,?,?,?,?,?)",
                [(host, r["mode"], r["comparisons"], r["gains"], r["missed"], r["overreached"], r["reason"])
                 for host, r in batch.render_hosts.items()],
            )
            cur.executemany("INSERT OR REPLACE INTO sitemap_urls VALUES (?,?,?,?,?,?,?)", batch.sitemap_urls)
            # A page's signals are those of its last capture; a host's, those its source said last.
            # (The host's robots.txt signals are the host's rows, not copied to each page.)
            cur.executemany("DELETE FROM ai_signals WHERE subject = ?", [(p.url,) for p in captured])
            cur.executemany("DELETE FROM ai_signals WHERE subject = ? AND source = ?", list(batch.ai_signals))
            cur.executemany("INSERT INTO ai_signals VALUES (?,?,?,?,?)", [
                *((subject, source, name, value, at)
                  for (subject, source), (values, at) in batch.ai_signals.items() for name, value in values.items()),
                *((p.url, *key.split(":", 1), value, p.fetched_at)
                  for p in captured for key, value in p.ai_signals.items() if not key.startswith("robots.txt:"))])
            cur.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        self.commits += 1
        # Completed: the requested URL, where a redirect ended, and URLs that failed for good.
        redirected = [p.final_url for p in pages if p.final_url != p.url]
        return [p.url for p in pages] + redirected + [e.url for e in errors] + skipped

    def close(self) -> None:
        try:
            self.commit()
        finally:
            self.conn.close()

    # -- reading ---------------------------------------------------------
    def query(self, sql: str, params: Iterable = ()) -> list[tuple]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def mirror_pairs(self, min_shared: int = 5, min_share: float = 0.5) -> list[tuple[str, str, int, float]]:
        """Host pairs that share many duplicate pages: (host, host, shared pages, share).

        ``shared`` counts pages of one host that duplicate a page of the other
        (either way round); ``share`` is that over the smaller host's stored pages.
        Pairs below ``min_shared`` pages or ``min_share`` are left out.
        """
        rows = self.query("""
            SELECT MIN(a.host, b.host), MAX(a.host, b.host), COUNT(*)
            FROM duplicates d JOIN pages a ON a.url = d.url JOIN pages b ON b.url = d.canonical
            WHERE a.host != b.host GROUP BY 1, 2""")
        sizes = dict(self.query("SELECT host, COUNT(*) FROM pages GROUP BY host"))
        pairs = [(a, b, n, n / min(sizes[a], sizes[b])) for a, b, n in rows]
        return sorted((p for p in pairs if p[2] >= min_shared and p[3] >= min_share), key=lambda p: (-p[2], p[0], p[1]))


def _host(url: str) -> str:
    from ..urls import host_of

    return host_of(url)
