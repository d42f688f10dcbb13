"""``scrapy crawl``: Scrapy's own, plus ``-s WORKERS=N`` (:mod:`crawlproj.distributed.local_workers`)."""

from __future__ import annotations

import argparse
import logging
import sys

from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.settings import Settings

from ..extensions import console
from ..errors import BadInput
from ..log_levels import install_log_filters
from ..profiles import ProfileAddon
from ..spiders.arguments import check_arguments
from ..distributed.local_workers import run_workers


class Command(ScrapyCrawl):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        # Before Scrapy's start-up lines: the console shows the crawl, not its versions and components.
        install_log_filters()

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        try:  # bad settings, arguments or seeds: one line and exit 2, not a traceback
            settings = self._check_input(args, opts)
        except BadInput as exc:
            print(f"crawlproj: {exc}", file=sys.stderr)
            if self.settings.get("LOG_FILE"):  # a Scrapyd job: its log is where the user looks
                logging.getLogger("crawlproj").error("crawlproj: %s", exc)
            self.exitcode = 2
            return
        if self.settings.getint("WORKERS") <= 1:
            super().run(args, opts)
            self._say_if_empty(settings)
            return
        argv = sys.argv[1:]  # Scrapy's execute() takes the command name out of sys.argv
        # The checked settings carry the chosen profile's store and WARC paths.
        self.exitcode = run_workers(argv if argv[:1] == ["crawl"] else ["crawl", *argv], settings)

    def _check_input(self, args: list[str], opts: argparse.Namespace) -> Settings:
        """The settings as the crawl will see them (the profile applied and validated), after
        the spider's arguments are checked if it can check them (``check_input``)."""
        settings = self.settings.copy()
        ProfileAddon().update_settings(settings)
        if len(args) == 1 and self.crawler_process is not None:
            try:
                spidercls = self.crawler_process.spider_loader.load(args[0])
            except KeyError:
                return settings  # Scrapy says so itself
            check_arguments(spidercls, opts.spargs)
            check = getattr(spidercls, "check_input", None)
            if check is not None:
                check(settings, **opts.spargs)
        return settings

    def _say_if_empty(self, settings: Settings) -> None:
        """A crawl that stored no page says why in one line and exits 1 (a worker of a
        distributed crawl may rightly store none: the crawl as a whole is judged elsewhere)."""
        if self.exitcode or "Distributed" in str(settings.get("SCHEDULER")) or not console.EMPTY_CRAWLS:
            return
        print(f"crawlproj: {console.EMPTY_CRAWLS[-1]}", file=sys.stderr)
        self.exitcode = 1
