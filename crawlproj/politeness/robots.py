"""robots.txt answers and rules for Scrapy: RFC 9309's reading of a status, and Scrapy's parser
interface over :class:`~.robots_rules.RobotsRules` (the middleware is
:mod:`crawlproj.downloadermiddlewares.robots_txt`).

Every decision is :func:`is_allowed`'s: RFC 9309's reading of the file's groups and product
tokens, with protego matching the paths. A 4xx robots.txt means no rules (allow all); a 5xx,
or an unreachable robots.txt, means the whole host is disallowed.
"""

from __future__ import annotations

from scrapy.robotstxt import RobotParser

from .robots_rules import MAX_BYTES, RobotsRules, is_allowed  # noqa: F401 - is_allowed: the public decision

ALLOW_ALL = b""
DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"
MAX_ROBOTS_BYTES = MAX_BYTES  # RFC 9309: parse at least 500 KiB; we parse exactly that much


def robots_body(status: int, body: bytes) -> bytes:
    """The rules to apply for a robots.txt answer with this status."""
    if 400 <= status < 500:
        return ALLOW_ALL
    if status >= 500 or status < 200:
        return DISALLOW_ALL
    return body[:MAX_ROBOTS_BYTES]


class Rfc9309RobotParser(RobotParser):
    """Scrapy's robots.txt parser interface over :class:`~.robots_rules.RobotsRules` (RFC 9309
    structure, protego's path matching): every decision of the middleware is
    :func:`is_allowed`'s."""

    def __init__(self, robotstxt_body: bytes) -> None:
        self.rules = RobotsRules(robotstxt_body)
        self.sitemaps = self.rules.sitemaps

    @classmethod
    def from_crawler(cls, crawler, robotstxt_body: bytes) -> Rfc9309RobotParser:  # noqa: ANN001 - Crawler
        return cls(robotstxt_body)

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        url = url.decode() if isinstance(url, bytes) else url
        user_agent = user_agent.decode() if isinstance(user_agent, bytes) else user_agent
        return self.rules.allowed(url, user_agent)

    def crawl_delay(self, user_agent: str) -> float | None:
        return self.rules.crawl_delay(user_agent)
