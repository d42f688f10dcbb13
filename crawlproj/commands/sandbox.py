"""``scrapy sandbox``: serve the deterministic sandbox web on loopback."""

from __future__ import annotations

import argparse
import asyncio

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError


def _server():
    """The sandbox's server module: part of the checkout (the top-level ``sandbox/``), not of
    the deployed package, so imported only when the command runs."""
    try:
        from sandbox import server
    except ImportError:
        raise UsageError("the sandbox is part of the project's checkout, not of a deployed egg") from None
    return server


class Command(ScrapyCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--hosts N --pages N --port P --seed S ...]"

    def short_desc(self) -> str:
        return "Serve the synthetic sandbox web (h<i>.sandbox.test) on a loopback port"

    def long_desc(self) -> str:
        return (
            "Serve a deterministic multi-host web for rehearsing crawls. Crawl it with "
            "-s HOST_RESOLVE='*.sandbox.test=127.0.0.1'. The politeness report is at "
            "http://127.0.0.1:PORT/__sandbox__/report?interval=SECONDS."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        _server().add_arguments(parser)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        server = _server()
        asyncio.run(server.serve(server.config_from_args(opts), opts.port, opts.bind, opts.seeds_file,
                                 tuple(filter(None, opts.also_bind.split(",")))))
