"""``scrapy watch add URL [--css SEL | --xpath EXPR] [--ignore REGEX ...] [--every DURATION]``,
``scrapy watch list``, ``scrapy watch remove URL``: the pages an incremental crawl tells you about
(the store's ``watches`` table; a running crawl picks them up within WATCH_REFRESH_SECONDS)."""

from __future__ import annotations

import json
import os
import re
import sys
import time

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from . import _path, add_store_option, store_path


def watch_store(option: str | None, settings) -> str:
    """The store watches go in: --store, else the crawl a command would read, else STORE_URI's
    (made when it does not exist yet: watches may come before the first crawl)."""
    if option:
        return _path(option)
    try:
        return store_path(None, settings)
    except UsageError:
        path = _path(settings.get("STORE_URI"))
        print(f"watching in {path} (STORE_URI)", file=sys.stderr)
        return path


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return ("add URL [--css SELECTOR | --xpath EXPR] [--ignore REGEX]... [--every DURATION]  |  list  |  "
                "remove URL   [--store URI]")

    def short_desc(self) -> str:
        return "Watch pages: what of each counts (a CSS or XPath selection), what to ignore, how often to look"

    def long_desc(self) -> str:
        return ("An incremental crawl (-s PROFILE=incremental) revisits a watched page at least every DURATION "
                "(90s, 15m, 2h, 1d), within its server's politeness, and reports a change only when the watched "
                "content changed: the selection, else the main text, with --ignore patterns cut out first.")

    def add_options(self, parser) -> None:
        super().add_options(parser)
        add_store_option(parser, "sqlite:///path (default: the last crawl's, else STORE_URI)")
        parser.add_argument("--css", help="watch what this CSS selector picks")
        parser.add_argument("--xpath", help="watch what this XPath expression picks")
        parser.add_argument("--ignore", action="append", default=[], help="a regex cut from the text (repeatable)")
        parser.add_argument("--every", help="revisit at least this often (90s, 15m, 2h, 1d)")

    def run(self, args: list[str], opts) -> None:
        from ..changes.watches import check_selector, parse_duration
        from ..store.changes import Watch, add_watch, list_watches, remove_watch
        from ..store.sqlite import SqliteStore
        from ..urls import canonicalize

        if not args or args[0] not in ("add", "list", "remove"):
            raise UsageError("say what to do: scrapy watch add URL | list | remove URL")
        action, rest = args[0], args[1:]
        if action in ("add", "remove") and len(rest) != 1:
            raise UsageError(f"scrapy watch {action} takes one URL")
        if action == "list" and rest:
            raise UsageError("scrapy watch list takes no argument")
        if action == "add":
            url = rest[0]
            if not re.match(r"https?://[^/\s]+", url):
                raise UsageError(f"{url!r} is not an http(s) URL")
            if opts.css and opts.xpath:
                raise UsageError("give --css or --xpath, not both")
            try:
                check_selector(opts.css, opts.xpath)
                every = parse_duration(opts.every) if opts.every else None
                for pattern in opts.ignore:
                    try:
                        re.compile(pattern)
                    except re.error as exc:
                        raise ValueError(f"--ignore {pattern!r} is not a regular expression: {exc}") from None
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        path = watch_store(opts.store, self.settings)
        if action != "list" or os.path.exists(path):
            store = SqliteStore(path)  # its tables made, in a store from before watches
            conn = store.conn
        else:
            print("no watch (no store yet)", file=sys.stderr)
            return
        try:
            if action == "add":
                watch = Watch(canonicalize(url), opts.css, opts.xpath, tuple(opts.ignore), every, time.time())
                add_watch(conn, watch)
                print(json.dumps({"watching": watch.url, "css": watch.css, "xpath": watch.xpath,
                                  "ignore": list(watch.ignore), "every": watch.every, "store": path}))
            elif action == "remove":
                url = canonicalize(rest[0])
                if not remove_watch(conn, url):
                    raise UsageError(f"{url} is not watched (scrapy watch list shows what is)")
                print(json.dumps({"removed": url}))
            else:
                watches = list_watches(conn)
                for w in watches:
                    print(json.dumps({"url": w.url, "css": w.css, "xpath": w.xpath, "ignore": list(w.ignore),
                                      "every": w.every, "added_at": w.added_at}))
                if not watches:
                    print("no watch", file=sys.stderr)
        finally:
            store.close()
