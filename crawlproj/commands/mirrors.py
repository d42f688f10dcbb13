"""``scrapy mirrors``: host pairs that share many duplicate pages, from a crawl's store."""

from __future__ import annotations

import argparse
import json

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from ..store import open_store


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--min-shared N] [--min-share F] [--json] [-s STORE_URI=...]"

    def short_desc(self) -> str:
        return "List host pairs that mirror each other (many pages are exact or near duplicates)"

    def long_desc(self) -> str:
        return (
            "Reads the duplicates the content pipeline recorded in STORE_URI and prints each pair of hosts "
            "with at least --min-shared duplicate pages between them, making up at least --min-share of the "
            "smaller host's stored pages: host, host, shared pages, share."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--min-shared", type=int, default=5, help="duplicate pages a pair shares at least")
        parser.add_argument("--min-share", type=float, default=0.5, help="share of the smaller host's pages")
        parser.add_argument("--json", action="store_true", help="one JSON object a line")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            raise UsageError("scrapy mirrors takes no positional arguments")
        store = open_store(self.settings.get("STORE_URI"))
        try:
            for a, b, shared, share in store.mirror_pairs(opts.min_shared, opts.min_share):
                if opts.json:
                    print(json.dumps({"hosts": [a, b], "shared_pages": shared, "share": round(share, 3)}))
                else:
                    print(f"{a}\t{b}\t{shared}\t{share:.2f}")
        finally:
            store.close()
