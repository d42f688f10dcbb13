"""``scrapy export [--store URI ...] --format jsonl|parquet|wet|json|csv|xml [--out FILE] [--fields a,b]``."""

from __future__ import annotations

import json
import sys
import time

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from ..progress import progress_bar
from . import store_paths


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "--format jsonl|parquet|wet|json|csv|xml [--store URI ...] [--out FILE] [--fields a,b,...]"

    def short_desc(self) -> str:
        return "Export a finished crawl's pages (text, Markdown, links...) as JSON lines, Parquet or WET"

    def long_desc(self) -> str:
        return ("One record per stored page, the same as the crawl's feeds (-O pages.jsonl) give, read from the store: "
                "JSON lines, JSON, CSV or XML; Parquet (typed columns, zstd row groups: DuckDB, pandas and Spark read "
                "it as it is); or WET, a WARC file of each page's text as a conversion record referring to its "
                "response record. Give --store several times, or a shell pattern, for a distributed crawl's shards. "
                "docs/exporting.md has the fields and the Parquet schema.")

    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.add_argument("--store", action="append", help="sqlite:///path, several times or with a shell pattern "
                            "for a crawl's shards (default: the last crawl's, else STORE_URI, else the demo's)")
        parser.add_argument("--format", default="jsonl", help="jsonl (default), parquet, wet, json, csv or xml")
        parser.add_argument("--out", help="the file, or - for standard output (default: beside the store, "
                                          "data/crawl.db -> data/crawl.pages.jsonl, .pages.parquet, .warc.wet.gz)")
        parser.add_argument("--fields", help="the record's fields, in order, comma-separated (default: "
                                             "docs/exporting.md's)")

    def run(self, args: list[str], opts) -> None:
        from ..exports.files import FORMATS, ExportError, default_out, export
        from ..exports.reading import count_pages
        from ..exports.records import DEFAULT_FIELDS

        if args:
            raise UsageError("scrapy export takes no positional arguments (the store is --store)")
        if opts.format not in FORMATS:
            raise UsageError(f"--format {opts.format!r}: choose from {', '.join(FORMATS)}")
        from ..extras import hint, installed

        if opts.format == "parquet" and not installed("parquet"):
            raise UsageError(f"scrapy export --format parquet {hint('parquet')}")
        if opts.fields and opts.format == "wet":
            raise UsageError("--fields does not apply to WET: its records are each page's text")
        fields = tuple(f.strip() for f in opts.fields.split(",") if f.strip()) if opts.fields else DEFAULT_FIELDS
        stores = store_paths(opts.store, self.settings)
        out = opts.out or default_out(stores[0], opts.format)
        started = time.monotonic()
        try:
            with progress_bar(count_pages(stores), f"exporting pages as {opts.format}", "page") as bar:
                done = export(stores, opts.format, out, fields, tick=bar.update)
        except (ExportError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        seconds = time.monotonic() - started
        summary = {"out": done.out, "format": done.format, "pages": done.pages, "bytes": done.bytes, **done.detail,
                   "seconds": round(seconds, 2), "pages_per_s": round(done.pages / seconds, 1) if seconds else None}
        print(json.dumps(summary), file=sys.stderr if out == "-" else sys.stdout)
