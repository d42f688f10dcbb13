"""``scrapy search "QUERY" [--store URI] [--limit N] [--json] [--all]``: the crawl's pages that match,
best first (the store's full-text index, :mod:`crawlproj.store.search`); ``--reindex`` builds the index."""

from __future__ import annotations

import json
import sqlite3
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from ..progress import progress_bar
from . import add_store_option, store_path


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return '"QUERY" [--store URI] [--limit N] [--json] [--all]   |   --reindex [--store URI]'

    def short_desc(self) -> str:
        return "Search a crawl's pages by their text: ranked URLs with titles and highlighted snippets"

    def long_desc(self) -> str:
        return ('Every word of the query must be in the page (title or text); "a phrase" keeps its words together, '
                "word* is a prefix, OR and NOT work between words. Chinese, Japanese and Korean are found without "
                "spaces between words. Pages are ranked by bm25, a title match counting 4 times a text match; "
                "duplicates of other pages are left out unless --all. --reindex builds the index from the stored "
                "text (a crawl made with CONTENT_SEARCH off).")

    def add_options(self, parser) -> None:
        super().add_options(parser)
        add_store_option(parser)
        parser.add_argument("--limit", type=int, default=10, help="results, at most (default 10)")
        parser.add_argument("--json", action="store_true", help="one JSON object a result")
        parser.add_argument("--all", action="store_true", help="duplicates of other pages too")
        parser.add_argument("--reindex", action="store_true", help="build the index anew from the stored text")

    def run(self, args: list[str], opts) -> None:
        from ..store import search

        path = store_path(opts.store, self.settings)
        if opts.reindex:
            self._reindex(path)
            if not args:
                return
        if len(args) != 1 or not args[0].strip():
            raise UsageError('give one query, quoted: scrapy search "words to find"')
        if opts.limit < 1:
            raise UsageError("--limit must be 1 or more")
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            if not search.indexed_pages(conn):
                raise UsageError(f"no page of the crawl in {path} is in the search index (crawled with CONTENT_SEARCH "
                                 "off, or with no page content): scrapy search --reindex builds it from the stored text")
            hits = search.search(conn, args[0], opts.limit, duplicates=opts.all)
        except sqlite3.OperationalError as exc:  # FTS5 refused the expression
            raise UsageError(f"the query {args[0]!r} cannot be searched: {exc}") from None
        finally:
            conn.close()
        bold = ("\033[1m", "\033[0m") if sys.stdout.isatty() else ("**", "**")
        for rank, hit in enumerate(hits, 1):
            if opts.json:
                print(json.dumps({"rank": rank, "url": hit.url, "title": hit.title, "score": round(-hit.score, 3),
                                  "snippet": hit.snippet, "highlights": hit.highlights}, ensure_ascii=False))
            else:
                print(f"{rank}. {hit.title or '(no title)'}\n   {hit.url}\n   {search.marked(hit, *bold)}\n")
        if not hits and not opts.json:
            print("no page matches", file=sys.stderr)

    @staticmethod
    def _reindex(path: str) -> None:
        from ..store import search
        from ..store.sqlite import SqliteStore

        store = SqliteStore(path)  # (its tables made, in a store from before them)
        try:
            total = store.conn.execute("SELECT COUNT(*) FROM page_content").fetchone()[0]
            with progress_bar(total, "indexing pages", "page") as bar:
                n = search.reindex(store.conn, tick=bar.update)
        finally:
            store.close()
        print(json.dumps({"store": path, "indexed": n}), file=sys.stderr)
