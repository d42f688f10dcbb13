"""crawlproj's exceptions, in one place (as ``scrapy/exceptions.py``): imported by every layer,
importing none of crawlproj's. Every one is a :class:`CrawlprojError`, so a caller can catch what
crawlproj raises apart from its libraries' errors; each also keeps the builtin or Scrapy base its
callers catch it by (``ValueError``, Scrapy's ``IgnoreRequest``)."""

from __future__ import annotations

from scrapy.exceptions import IgnoreRequest


class CrawlprojError(Exception):
    """The base of every exception crawlproj raises."""


# -- input the crawl cannot start with -------------------------------------------
class BadInput(CrawlprojError, ValueError):
    """Input the crawl cannot start with (a setting, a spider argument, a seeds file): the
    ``crawl`` command prints its message as one line and exits 2."""


class SettingsError(BadInput):
    """A setting with a value the crawler cannot use. The message names it."""

    def __init__(self, name: str, value: object, problem: str) -> None:
        super().__init__(f"setting {name}={value!r} is invalid: {problem}")
        self.name = name


class InvalidURL(CrawlprojError, ValueError):
    """A URL the crawler refuses; ``reason`` is a stats-friendly word."""

    def __init__(self, reason: str, url: str) -> None:
        super().__init__(f"{reason}: {url[:200]!r}")
        self.reason = reason
        self.url = url

    def __reduce__(self) -> tuple:  # pickled back from the page helper process with its links
        return type(self), (self.reason, self.url)


# -- a request or a page's work that ends early ------------------------------------
class AddressRefused(CrawlprojError, IgnoreRequest):
    """A request refused by address safety; ``kind`` is the reason class (loopback, private, ...)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class HeadersTooLarge(CrawlprojError):
    """A response whose headers ran past ``DOWNLOAD_MAX_HEADERS`` or ``DOWNLOAD_MAX_HEADER_BYTES``."""


class RenderTimeout(CrawlprojError):
    """A render took longer than ``RENDER_TIMEOUT``; its page was closed."""


class StageTimeout(CrawlprojError):
    """Per-page work that ran past ``PAGE_STAGE_TIMEOUT``."""


class DocumentFailed(CrawlprojError):
    """A document's reading ran out of its memory cap, or killed its helper process."""


# -- commands' outputs ---------------------------------------------------------
class ExportError(CrawlprojError, ValueError):
    """What cannot be exported, said in one line."""


class WaczError(CrawlprojError):
    """The crawl could not be packaged: no store, no archive, or py-wacz refused."""
