"""crawlproj's Scrapy commands (COMMANDS_MODULE): ``scrapy sandbox``, ``scrapy demo``, ``scrapy report``,
``scrapy wacz``, ``scrapy mirrors``, ``scrapy merge``, ``scrapy seed``, ``scrapy dashboard``."""

from __future__ import annotations

from scrapy.exceptions import UsageError

from ..store import parse_store_uri


def add_store_option(parser, what: str = "sqlite:///path (default: STORE_URI)") -> None:
    parser.add_argument("--store", help=what)


def store_path(option: str | None, settings) -> str:
    """The database path of ``--store`` (default ``STORE_URI``); a bad URI is a usage error."""
    uri = option or settings.get("STORE_URI")
    try:
        return parse_store_uri(uri)[1]
    except ValueError as exc:
        raise UsageError(f"--store {uri!r}: {exc}") from None
