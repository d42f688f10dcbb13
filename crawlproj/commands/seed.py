"""``scrapy seed FILE [FILE ...] [--dashboard URL]``: add start URLs to a running crawl.

To a distributed crawl (the default): pushed to its Redis list, which workers read while
crawling (or at their start). To a local crawl: ``--dashboard`` names the crawl's dashboard
with the operator token (the URL it logs, or the ``DASHBOARD_URL_FILE`` it wrote), and the
URLs go to it (``POST /seed``). Either way they go through scope, robots.txt and the
frontier like any other URL.
"""

from __future__ import annotations

import json
import os

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from ..distributed import connection
from ..distributed.seeds import start_urls_key
from ..spiders.arguments import read_seed_lines
from ..urls import InvalidURL, canonicalize


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "FILE [FILE ...]"

    def short_desc(self) -> str:
        return "Add seed URLs to a running crawl: a distributed one's Redis, or a local one's dashboard (--dashboard)"

    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.add_argument("--dashboard", help="a local crawl's dashboard: its operator URL (with ?token=), "
                                                "or the JSON file DASHBOARD_URL_FILE names")

    def run(self, args: list[str], opts) -> None:
        if not args:
            raise UsageError("give one or more seed files")
        urls, bad = self._read(args)
        if opts.dashboard:
            print(json.dumps(self._to_dashboard(opts.dashboard, urls) | {"refused_in_files": bad}))
            return
        client = connection.from_settings(self.settings)
        key = start_urls_key(self.settings)
        if urls:
            client.rpush(key, *urls)
        print(json.dumps({"key": key, "pushed": len(urls), "refused": bad}))

    @staticmethod
    def _to_dashboard(where: str, urls: list[str]) -> dict:
        """POST the URLs to a running crawl's dashboard, with the operator token as a Bearer header."""
        import urllib.error
        import urllib.request
        from urllib.parse import parse_qs, urlsplit, urlunsplit

        if os.path.exists(where):
            with open(where, encoding="utf-8") as fh:
                where = json.load(fh)["operator"]
        parts = urlsplit(where)
        token = (parse_qs(parts.query).get("token") or [""])[0]
        if parts.scheme not in ("http", "https") or not token:
            raise UsageError(f"--dashboard {where!r}: give the dashboard's operator URL, with ?token=")
        endpoint = urlunsplit((parts.scheme, parts.netloc, "/seed", "", ""))
        request = urllib.request.Request(endpoint, data="\n".join(urls).encode(), method="POST",
                                         headers={"Authorization": f"Bearer {token}", "Content-Type": "text/plain"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            raise UsageError(f"the dashboard at {endpoint} refused: {exc.code} {exc.read().decode(errors='replace').strip()}") from None
        except OSError as exc:
            raise UsageError(f"no crawl's dashboard answers at {endpoint}: {exc}") from None

    def _read(self, args: list[str]) -> tuple[list[str], int]:
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
        return urls, bad
