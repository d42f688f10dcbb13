"""``scrapy changes [--since TIME] [--url URL] [--meaningful] [--json] [--store URI]``: what the crawl's
revisits found changed, oldest first, each with its diff (the store's ``changes`` table)."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import datetime, timezone

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from . import add_store_option, store_path


def parse_since(text: str, now: float | None = None) -> float:
    """Unix time of ``--since``: an ISO date or time (UTC unless it says), a duration ago
    (``90m``, ``2h``, ``1d``), or a unix time. ValueError naming the cause otherwise."""
    from ..changes.watches import parse_duration

    now = time.time() if now is None else now
    try:
        return float(text) if float(text) > 1e8 else now - parse_duration(text)
    except ValueError:
        pass
    try:
        return now - parse_duration(text)
    except ValueError:
        pass
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since {text!r}: give an ISO date or time (2026-11-27, 2026-11-27T17:45), "
                         "a duration ago (90m, 2h, 1d) or a unix time") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return stamp.timestamp()


def when(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def describe(c) -> str:  # noqa: ANN001 - a ChangeRecord
    """A change as the command prints it: a header, its facts, its diff."""
    kind = "meaningful" if c.meaningful else "noise"
    lines = [f"== {c.url}", f"   {when(c.at)}: {kind} ({c.reason}), {c.similarity:.1%} alike, "
             f"lines +{c.lines_added} -{c.lines_removed}" + (" [watch]" if c.watched else "")]
    if c.previous_warc_file or c.warc_file:
        lines.append(f"   captures: {c.previous_warc_file}@{c.previous_warc_offset} -> {c.warc_file}@{c.warc_offset}")
    if (c.title_before or "") != (c.title_after or ""):
        lines.append(f"   title: {c.title_before!r} -> {c.title_after!r}")
    lines += [f"   link added: {u}" for u in c.links_added] + [f"   link removed: {u}" for u in c.links_removed]
    if c.diff:
        lines.append(c.diff)
    return "\n".join(lines) + "\n"


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--since TIME] [--url URL] [--meaningful] [--json] [--limit N] [--store URI]"

    def short_desc(self) -> str:
        return "What the crawl's revisits found changed, with diffs of the main text"

    def long_desc(self) -> str:
        return ("Each revisit that found new content is a change: meaningful when the page's main text, title or "
                "main-content links changed once dates, counters, tokens, whitespace and order are set aside, else "
                "noise. --since takes an ISO date or time (UTC), a duration ago (2h, 1d) or a unix time.")

    def add_options(self, parser) -> None:
        super().add_options(parser)
        add_store_option(parser)
        parser.add_argument("--since", help="changes at or after TIME (2026-11-27T17:00, 2h, 1d, unix time)")
        parser.add_argument("--url", help="changes of this page only")
        parser.add_argument("--meaningful", action="store_true", help="meaningful changes only (no noise)")
        parser.add_argument("--json", action="store_true", help="one JSON object a change")
        parser.add_argument("--limit", type=int, help="the latest N changes only")

    def run(self, args: list[str], opts) -> None:
        from ..store.changes import read_changes

        if args:
            raise UsageError(f"unexpected argument {args[0]!r} (give the page with --url)")
        if opts.limit is not None and opts.limit < 1:
            raise UsageError("--limit must be 1 or more")
        try:
            since = parse_since(opts.since) if opts.since else None
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        path = store_path(opts.store, self.settings)
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            changes = read_changes(conn, since, opts.url, opts.meaningful, opts.limit, newest_first=bool(opts.limit))
        finally:
            conn.close()
        changes.sort(key=lambda c: c.at)
        for c in changes:
            print(json.dumps(c.as_json(), ensure_ascii=False) if opts.json else describe(c))
        if not changes and not opts.json:
            import sys

            print("no change recorded" + (" matching" if since or opts.url or opts.meaningful else ""), file=sys.stderr)
