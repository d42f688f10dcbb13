"""robots.txt with RFC 9309 status handling (protego parser).

Scrapy's stock middleware parses whatever body comes back, so a 503 page reads
as "allow everything". RFC 9309 says otherwise: a 4xx robots.txt means no
rules (allow all); a 5xx, or an unreachable robots.txt, means the whole host is
disallowed. Each answer is announced with :data:`crawlproj.signals.robots_fetched`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from twisted.internet.defer import Deferred

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as ScrapyRobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request, Response
from scrapy.utils.misc import build_from_crawler

from .. import signals

ALLOW_ALL = b""
DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"
#: RFC 9309: parse at least 500 KiB; we parse exactly that much.
MAX_ROBOTS_BYTES = 500 * 1024


def robots_body(status: int, body: bytes) -> bytes:
    """The rules to apply for a robots.txt answer with this status."""
    if 400 <= status < 500:
        return ALLOW_ALL
    if status >= 500 or status < 200:
        return DISALLOW_ALL
    return body[:MAX_ROBOTS_BYTES]


class RobotsTxtMiddleware(ScrapyRobotsTxtMiddleware):
    """Scrapy's robots.txt middleware, with RFC 9309 answers to 4xx, 5xx and failures."""

    async def _parse_robots(self, response: Response, netloc: str, request: Request) -> None:
        response = response.replace(body=robots_body(response.status, response.body))
        await super()._parse_robots(response, netloc, request)
        self.crawler.signals.send_catch_log(
            signals.robots_fetched, host=urlsplit(f"//{netloc}").hostname, status=response.status
        )

    def _robots_error(self, exc: Exception, netloc: str) -> None:
        # Unreachable robots.txt: disallow the host rather than crawl blind
        # (Scrapy answers None, which allows everything, to the waiting requests too).
        if not isinstance(exc, IgnoreRequest):
            self._stats.inc_value(f"robotstxt/exception_count/{type(exc)}")
        waiting = self._parsers[netloc]
        parser = build_from_crawler(self._parserimpl, self.crawler, DISALLOW_ALL)
        self._parsers[netloc] = parser
        if isinstance(waiting, Deferred):
            waiting.callback(parser)
        self.crawler.signals.send_catch_log(signals.robots_fetched, host=urlsplit(f"//{netloc}").hostname, status=None)
