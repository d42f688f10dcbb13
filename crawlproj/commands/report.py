"""``scrapy report [--store URI] [--out DIR]``: the crawl analysis report from a store."""

from __future__ import annotations

import json
import os
import sqlite3
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from ..progress import progress_bar
from ..report.analysis import analyse
from ..report.output import write_report
from . import add_store_option, store_path

#: Where `scrapy demo` (make demo) leaves its crawl.
DEMO_STORE = os.path.join("data", "demo", "crawl.db")


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return "Analyse a crawl store: host PageRank, TLDs, languages, statuses, links, duplicates, revisits"

    def add_options(self, parser) -> None:
        super().add_options(parser)
        add_store_option(parser, "sqlite:///path (default: STORE_URI; a merged store in distributed mode)")
        parser.add_argument("--out", default="data/report", help="output directory (default data/report)")

    def run(self, args: list[str], opts) -> None:
        path = store_path(opts.store, self.settings)
        if not opts.store and not os.path.exists(path) and os.path.exists(DEMO_STORE):
            # Right after `make demo` there is no crawl of one's own yet: report the demo's.
            print(f"no crawl store at {path}; reporting the demo crawl in {DEMO_STORE}", file=sys.stderr)
            path = DEMO_STORE
        if not os.path.exists(path):
            raise UsageError(f"no crawl store at {path} (give --store sqlite:///path/to/crawl.db)")
        with sqlite3.connect(path) as conn:
            pages = conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
        with progress_bar(pages, "reading pages", "page") as bar:
            result = analyse(path, self.settings.getlist("DYNAMIC_URL_PATTERNS"), tick=bar.update)
        files = write_report(result, opts.out)
        print(json.dumps({"pages": result["pages"], "hosts": result["hosts"], "by_language": result["by_language"],
                          "files": files}, ensure_ascii=False))
