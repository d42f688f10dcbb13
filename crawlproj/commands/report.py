"""``scrapy report [--store URI] [--out DIR]``: the crawl analysis report from a store."""

from __future__ import annotations

import json
import sqlite3

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from ..progress import progress_bar
from . import add_store_option, store_path


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return "Analyse a crawl store: host PageRank, TLDs, languages, statuses, links, duplicates, revisits"

    def add_options(self, parser) -> None:
        super().add_options(parser)
        add_store_option(parser)
        parser.add_argument("--out", default="data/report", help="output directory (default data/report)")

    def run(self, args: list[str], opts) -> None:
        # Here, not at the top: Scrapy imports every command to list them, and the report's
        # scipy and matplotlib would cost every crawl process half a CPU-second to start.
        from ..extras import hint, installed

        if not installed("report"):
            raise UsageError(f"scrapy report {hint('report')}")
        from ..report.analysis import analyse
        from ..report.output import write_report

        path = store_path(opts.store, self.settings)
        with sqlite3.connect(path) as conn:
            pages = conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
        with progress_bar(pages, "reading pages", "page") as bar:
            result = analyse(path, self.settings.getlist("DYNAMIC_URL_PATTERNS"), tick=bar.update)
        files = write_report(result, opts.out)
        print(json.dumps({"pages": result["pages"], "hosts": result["hosts"], "by_language": result["by_language"],
                          "files": files}, ensure_ascii=False))
