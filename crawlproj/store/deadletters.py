"""The dead-letter queue: requests that ran out of retries, kept to be tried again later.

A URL whose every attempt failed (a timeout, a refused connection, a 503 after
``RETRY_TIMES`` retries) is otherwise lost: the URL-seen filter holds it, so no later
link brings it back. Here it is kept with why it failed, how many attempts it took and
the last error, in SQLite beside the store (``data/crawl.deadletters.db``, committed at
once: a kill -9 loses none), or in Redis for a distributed crawl
(:class:`crawlproj.distributed.deadletters.RedisDeadLetters`, chosen by ``DEADLETTERS_CLASS``).

``scrapy deadletters list|retry|purge`` reads and changes it. ``retry`` marks entries; a
running crawl takes marked entries every ``DEADLETTERS_POLL_SECONDS`` and the next crawl
takes them at its start (:class:`DeadLetterQueue`), and sends them again past the
URL-seen filter, through scope, robots.txt and the frontier like any request.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object
from twisted.internet import task

from .. import signals as crawl_signals
from . import beside_store, settings_store
from .sqlite import use_wal

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeadLetter:
    """One URL that ran out of retries."""

    url: str
    host: str
    kind: str  # dns, timeout, connection_refused, connection_lost, receive, http_503, ...
    attempts: int  # every attempt so far, earlier dead-letterings included
    last_error: str
    depth: int
    first_at: float
    last_at: float
    retry: bool = False  # marked to be sent again


class DeadLetterStore(Protocol):
    """Where dead letters are kept: :class:`SqliteDeadLetters`, or Redis
    (:class:`crawlproj.distributed.deadletters.RedisDeadLetters`)."""

    def add(self, url: str, host: str, kind: str, attempts: int, error: str, depth: int, at: float) -> None: ...

    def list(self, host: str | None = None, kind: str | None = None) -> list[DeadLetter]: ...

    def mark_retry(self, host: str | None = None, kind: str | None = None) -> int: ...

    def take_marked(self, limit: int) -> list[DeadLetter]: ...

    def purge(self, host: str | None = None, kind: str | None = None) -> int: ...

    def close(self) -> None: ...


def matches(letter: DeadLetter, host: str | None, kind: str | None) -> bool:
    return (host is None or letter.host == host) and (kind is None or letter.kind == kind)


class SqliteDeadLetters:
    """Dead letters in one SQLite file (WAL; every change committed at once)."""

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
        self.path = path
        self.conn = sqlite3.connect(path, timeout=30, check_same_thread=False)
        use_wal(self.conn)  # the workers of a WORKERS crawl share this file
        self.conn.execute("""CREATE TABLE IF NOT EXISTS dead_letters (
            url TEXT PRIMARY KEY, host TEXT NOT NULL, kind TEXT NOT NULL, attempts INTEGER NOT NULL,
            last_error TEXT NOT NULL, depth INTEGER NOT NULL, first_at REAL NOT NULL, last_at REAL NOT NULL,
            retry INTEGER NOT NULL DEFAULT 0)""")
        self.conn.commit()

    @classmethod
    def from_settings(cls, settings: Any) -> SqliteDeadLetters:
        return cls(settings.get("DEADLETTERS_DB") or beside_store(settings_store(settings), "deadletters"))

    def add(self, url: str, host: str, kind: str, attempts: int, error: str, depth: int, at: float) -> None:
        self.conn.execute("""INSERT INTO dead_letters VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)
                             ON CONFLICT(url) DO UPDATE SET kind = excluded.kind, attempts = attempts + excluded.attempts,
                             last_error = excluded.last_error, last_at = excluded.last_at, retry = 0""",
                          (url, host, kind, attempts, error, depth, at, at))
        self.conn.commit()

    def _where(self, host: str | None, kind: str | None) -> tuple[str, list]:
        clauses, args = [], []
        if host is not None:
            clauses.append("host = ?")
            args.append(host)
        if kind is not None:
            clauses.append("kind = ?")
            args.append(kind)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", args

    def _select(self, where: str, args: list) -> list[DeadLetter]:
        rows = self.conn.execute(f"SELECT url, host, kind, attempts, last_error, depth, first_at, last_at, retry "
                                 f"FROM dead_letters{where}", args).fetchall()
        return [DeadLetter(*row[:-1], retry=bool(row[-1])) for row in rows]

    def list(self, host: str | None = None, kind: str | None = None) -> list[DeadLetter]:
        where, args = self._where(host, kind)
        return self._select(f"{where} ORDER BY host, url", args)

    def mark_retry(self, host: str | None = None, kind: str | None = None) -> int:
        where, args = self._where(host, kind)
        count = self.conn.execute(f"UPDATE dead_letters SET retry = 1{where}", args).rowcount
        self.conn.commit()
        return count

    def take_marked(self, limit: int) -> list[DeadLetter]:
        """Up to ``limit`` marked entries, removed from the queue (a new failure puts one back)."""
        letters = self._select(" WHERE retry = 1 ORDER BY host, url LIMIT ?", [limit])
        self.conn.executemany("DELETE FROM dead_letters WHERE url = ?", [(letter.url,) for letter in letters])
        self.conn.commit()
        return letters

    def purge(self, host: str | None = None, kind: str | None = None) -> int:
        where, args = self._where(host, kind)
        count = self.conn.execute(f"DELETE FROM dead_letters{where}", args).rowcount
        self.conn.commit()
        return count

    def close(self) -> None:
        self.conn.close()


def dead_letter_store(settings: Any) -> DeadLetterStore:
    """The store ``DEADLETTERS_CLASS`` names, built by its ``from_settings``."""
    return load_object(settings.get("DEADLETTERS_CLASS")).from_settings(settings)


class DeadLetterQueue:
    """Keeps the requests that ran out of retries (:data:`crawlproj.signals.retries_exhausted`,
    sent by the spiders) in the dead-letter store, and sends entries marked for retry
    again: at the start, then every ``DEADLETTERS_POLL_SECONDS``, ``DEADLETTERS_RETRY_BATCH``
    at a time, with ``dont_filter`` (the URL-seen filter holds them). Stats:
    ``deadletters/added``, ``deadletters/retried``, ``deadletters/kept``."""

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        if not s.getbool("DEADLETTERS_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.stats = crawler.stats
        self.store = dead_letter_store(s)
        self.poll = s.getfloat("DEADLETTERS_POLL_SECONDS")
        self.batch = s.getint("DEADLETTERS_RETRY_BATCH")
        self._loop: task.LoopingCall | None = None
        crawler.signals.connect(self.retries_exhausted, signal=crawl_signals.retries_exhausted)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DeadLetterQueue:
        return cls(crawler)

    def retries_exhausted(self, url: str, host: str, kind: str, attempts: int, error: str, depth: int) -> None:
        self.store.add(url, host, kind, attempts, error[:500], depth, time.time())
        self.stats.inc_value("deadletters/added")
        self.stats.inc_value("deadletters/kept")

    def spider_opened(self, spider: Any) -> None:
        self.stats.set_value("deadletters/kept", len(self.store.list()))
        self._loop = task.LoopingCall(self.send_marked)
        self._loop.start(self.poll, now=True)

    def send_marked(self) -> None:
        spider = self.crawler.spider
        engine = self.crawler.engine
        if spider is None or engine is None:
            return
        letters = self.store.take_marked(self.batch)
        for letter in letters:
            request = spider.request(letter.url).replace(dont_filter=True)
            request.meta["depth"] = letter.depth
            request.meta["deadletter_retry"] = True
            engine.crawl(request)
        if letters:
            self.stats.inc_value("deadletters/retried", len(letters))
            self.stats.inc_value("deadletters/kept", -len(letters))
            logger.info("dead letters: sent %d marked for retry again", len(letters))

    def spider_closed(self, spider: Any) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.store.close()


def describe(letters: Iterable[DeadLetter]) -> list[dict]:
    return [asdict(letter) for letter in letters]
