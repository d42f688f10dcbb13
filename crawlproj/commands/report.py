"""``scrapy report [--store URI] [--out DIR]``: the crawl analysis report from a store."""

from __future__ import annotations

import json
import os
import sqlite3

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from ..progress import progress_bar
from ..report.analysis import analyse
from ..report.output import write_report
from ..store import parse_store_uri


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return "Analyse a crawl store: host PageRank, TLDs, languages, statuses, links, duplicates, revisits"

    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.add_argument("--store", help="sqlite:///path (default: STORE_URI; a merged store in distributed mode)")
        parser.add_argument("--out", default="data/report", help="output directory (default data/report)")

    def run(self, args: list[str], opts) -> None:
        uri = opts.store or self.settings.get("STORE_URI")
        try:
            _, path = parse_store_uri(uri)
        except ValueError as exc:
            raise UsageError(f"--store {uri!r}: {exc}") from None
        if not os.path.exists(path):
            raise UsageError(f"no crawl store at {path} (give --store sqlite:///path/to/crawl.db)")
        with sqlite3.connect(path) as conn:
            pages = conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
        with progress_bar(pages, "reading pages", "page") as bar:
            result = analyse(path, self.settings.getlist("DYNAMIC_URL_PATTERNS"), tick=bar.update)
        files = write_report(result, opts.out)
        print(json.dumps({"pages": result["pages"], "hosts": result["hosts"], "by_language": result["by_language"],
                          "files": files}, ensure_ascii=False))
