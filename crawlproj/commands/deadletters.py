"""``scrapy deadletters list|retry|purge [--host H] [--kind K] [--json]``: the dead-letter queue.

``list`` shows the requests that ran out of retries (URL, host, kind, attempts, last
error); ``retry`` marks them to be sent again, past the URL-seen filter, by the running
crawl (within ``DEADLETTERS_POLL_SECONDS``) or the next one; ``purge`` forgets them.
The queue is the one the settings name (``DEADLETTERS_CLASS``: beside ``STORE_URI``, or
in Redis for the distributed profile).
"""

from __future__ import annotations

import json
import os
import time

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from ..store.deadletters import dead_letter_store, describe
from . import add_store_option, store_path

ACTIONS = ("list", "retry", "purge")


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "list|retry|purge [--host HOST] [--kind KIND] [--json] [--store URI]"

    def short_desc(self) -> str:
        return "List, retry or purge the requests that ran out of retries (the dead-letter queue)"

    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.add_argument("--host", help="only this host's")
        parser.add_argument("--kind", help="only this kind (dns, timeout, connection_refused, http_503, ...)")
        parser.add_argument("--json", action="store_true", help="one JSON document instead of a table")
        add_store_option(parser)

    def run(self, args: list[str], opts) -> None:
        if len(args) != 1 or args[0] not in ACTIONS:
            raise UsageError(f"give one action: {', '.join(ACTIONS)}")
        settings = self.settings
        if settings.get("DEADLETTERS_CLASS").endswith("SqliteDeadLetters") and not settings.get("DEADLETTERS_DB"):
            # The crawl's own queue, beside its store; never a new empty one.
            settings = settings.copy()
            settings.set("STORE_URI", "sqlite:///" + os.path.abspath(store_path(opts.store, self.settings)))
        store = dead_letter_store(settings)
        try:
            if args[0] == "list":
                letters = store.list(opts.host, opts.kind)
                if opts.json:
                    print(json.dumps(describe(letters)))
                    return
                for letter in letters:
                    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(letter.last_at))
                    mark = " (marked for retry)" if letter.retry else ""
                    print(f"{letter.url}\t{letter.kind}\t{letter.attempts} attempts\t{when}Z\t{letter.last_error}{mark}")
                print(f"{len(letters)} dead letters")
            else:
                count = store.mark_retry(opts.host, opts.kind) if args[0] == "retry" else store.purge(opts.host, opts.kind)
                print(json.dumps({args[0]: count}) if opts.json else
                      f"{count} marked for retry" if args[0] == "retry" else f"{count} purged")
        finally:
            store.close()
