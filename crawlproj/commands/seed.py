"""``scrapy seed FILE [FILE ...]``: add start URLs to a running (or future) distributed crawl."""

from __future__ import annotations

import json

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from ..distributed import connection
from ..distributed.seeds import start_urls_key
from ..spiders.base import read_seed_lines
from ..urls import InvalidURL, canonicalize


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "FILE [FILE ...]"

    def short_desc(self) -> str:
        return "Push seed URLs to the distributed crawl's Redis (REDIS_URL, REDIS_PREFIX)"

    def run(self, args: list[str], opts) -> None:
        if not args:
            raise UsageError("give one or more seed files")
        client = connection.from_settings(self.settings)
        key = start_urls_key(self.settings)
        urls, bad = [], 0
        for path in args:
            with open(path, "rb") as fh:
                for number, raw in read_seed_lines(fh):
                    if raw is None:
                        bad += 1
                        print(f"{path}:{number}: not UTF-8, skipped")
                        continue
                    try:
                        urls.append(canonicalize(raw))
                    except InvalidURL as exc:
                        bad += 1
                        print(f"{path}:{number}: not a crawlable URL ({exc.reason}): {raw!r}")
        if urls:
            client.rpush(key, *urls)
        print(json.dumps({"key": key, "pushed": len(urls), "refused": bad}))
