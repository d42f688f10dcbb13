"""``scrapy crawl``: Scrapy's own, plus ``-s WORKERS=N`` (:mod:`crawlproj.workers`)."""

from __future__ import annotations

import argparse
import sys

from scrapy.commands.crawl import Command as ScrapyCrawl

from ..profiles import ProfileAddon
from ..workers import run_workers


class Command(ScrapyCrawl):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if self.settings.getint("WORKERS") <= 1:
            super().run(args, opts)
            return
        settings = self.settings.copy()
        ProfileAddon().update_settings(settings)  # the store and WARC paths of the chosen profile
        argv = sys.argv[1:]  # Scrapy's execute() takes the command name out of sys.argv
        self.exitcode = run_workers(argv if argv[:1] == ["crawl"] else ["crawl", *argv], settings)
