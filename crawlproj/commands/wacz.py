"""``scrapy wacz [--store URI] [--out FILE] [--title TEXT]``: package a crawl as a WACZ."""

from __future__ import annotations

import json
import os

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from . import add_store_option, store_path
from ..store import parse_store_uri
from ..store.warc_pipeline import digest_index_path
from ..store.wacz import WaczError, default_wacz_path, write_wacz


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return "Package a crawl's WARC files as a WACZ (CDXJ index, pages list, datapackage) for replay"

    def add_options(self, parser) -> None:
        super().add_options(parser)
        add_store_option(parser)
        parser.add_argument("--out", help="the WACZ file (default: beside the store, data/crawl.db -> data/crawl.wacz)")
        parser.add_argument("--title", help="the package's title (default: from the store's name)")

    def run(self, args: list[str], opts) -> None:
        from ..extras import hint, installed

        if not installed("wacz"):
            raise UsageError(f"scrapy wacz {hint('wacz')}")
        path = store_path(opts.store, self.settings)
        # The settings' digest index is that of STORE_URI's crawl; another crawl keeps its own.
        own = os.path.abspath(path) == os.path.abspath(parse_store_uri(self.settings.get("STORE_URI"))[1])
        try:
            package = write_wacz(path, opts.out or default_wacz_path(path), opts.title,
                                 digest_index_path(self.settings) if own else None)
        except WaczError as exc:
            raise UsageError(str(exc)) from None
        print(json.dumps({"wacz": package.path, "pages": package.pages, "warc_files": package.warc_files,
                          "bytes": package.bytes}))
