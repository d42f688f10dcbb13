"""``scrapy wacz [--store URI] [--out FILE] [--title TEXT]``: package a crawl as a WACZ."""

from __future__ import annotations

import json

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from . import add_store_option, store_path
from ..store.archive import digest_index_path
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
        path = store_path(opts.store, self.settings)
        try:
            package = write_wacz(path, opts.out or default_wacz_path(path), opts.title,
                                 None if opts.store else digest_index_path(self.settings))  # --store: its own
        except WaczError as exc:
            raise UsageError(str(exc)) from None
        print(json.dumps({"wacz": package.path, "pages": package.pages, "warc_files": package.warc_files,
                          "bytes": package.bytes}))
