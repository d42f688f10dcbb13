"""``scrapy merge OUT SHARD [SHARD ...]``: one database from a distributed crawl's worker shards."""

from __future__ import annotations

import glob
import json

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from ..progress import progress_bar
from ..store.merge import merge_shards


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "OUT.db SHARD.db [SHARD.db ...]   (shell patterns allowed: 'data/distributed/*/crawl.db')"

    def short_desc(self) -> str:
        return "Merge the SQLite shards of distributed workers into one store"

    def run(self, args: list[str], opts) -> None:
        if len(args) < 2:
            raise UsageError("give the output database and at least one shard")
        shards = sorted({path for pattern in args[1:] for path in (glob.glob(pattern) or [pattern])})
        try:
            with progress_bar(len(shards), "merging shards", "shard") as bar:
                summary = merge_shards(args[0], shards, tick=bar.update)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        print(json.dumps(summary))
