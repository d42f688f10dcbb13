"""Crawl scope: which discovered URLs a spider may follow (pure logic)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass
class Scope:
    """Admission rules for URLs found on pages.

    ``domains``: hosts equal to or under one of these; ``suffixes``: hosts
    ending with one of these; ``origin`` + ``prefix``: the same scheme, host and
    port, and a path starting with the prefix; ``allow``/``deny``: regular
    expressions searched in the whole URL. An empty rule admits everything.
    """

    domains: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    origin: str | None = None
    prefix: str = "/"
    allow: re.Pattern[str] | None = None
    deny: re.Pattern[str] | None = None
    _domains: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._domains = tuple(d.lower().lstrip(".") for d in self.domains)

    def refuses_requisite(self, url: str) -> str | None:
        """Why a page's requisite (a stylesheet, an image) is out of scope, or None: only the
        domains and suffixes bound it, as a browser showing the page fetches it from any path
        or site within them (the prefix, allow and deny rules are for pages)."""
        return self._host_refused((urlsplit(url).hostname or "").lower())

    def _host_refused(self, host: str) -> str | None:
        if self._domains and not any(host == d or host.endswith("." + d) for d in self._domains):
            return "domain"
        if self.suffixes and not any(host.endswith(s.lower()) for s in self.suffixes):
            return "suffix"
        return None

    def refuses(self, url: str) -> str | None:
        """Why ``url`` is out of scope (a stats-friendly word), or None if it is in."""
        parts = urlsplit(url)
        reason = self._host_refused((parts.hostname or "").lower())
        if reason:
            return reason
        if self.origin is not None:
            if f"{parts.scheme}://{parts.netloc}" != self.origin:
                return "site"
            if not (parts.path or "/").startswith(self.prefix):
                return "prefix"
        if self.allow is not None and not self.allow.search(url):
            return "allow"
        if self.deny is not None and self.deny.search(url):
            return "deny"
        return None
