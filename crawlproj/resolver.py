"""Name resolution: Scrapy's caching resolver plus ``HOST_RESOLVE`` pins.

``HOST_RESOLVE`` maps host names or shell-style patterns to addresses, like
curl's ``--resolve``: ``{"*.sandbox.test": "127.0.0.1"}``. The sandbox web and
staging hosts are reached this way while URLs keep their real names.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import json
import time
from collections.abc import Sequence
from typing import Any

from scrapy.resolver import CachingThreadedResolver, dnscache
from twisted.internet import defer


def parse_host_resolve(value: Any) -> list[tuple[str, str]]:
    """Normalise a HOST_RESOLVE value to (pattern, address) pairs.

    Accepts a dict, a JSON object string, or ``"pattern=addr,pattern=addr"``.
    """
    if not value:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not valid JSON: {exc}") from None
        else:
            pairs = {}
            for part in filter(None, (p.strip() for p in text.split(","))):
                pattern, sep, addr = part.partition("=")
                if not sep:
                    raise ValueError(f"expected pattern=address, got {part!r}")
                pairs[pattern.strip()] = addr.strip()
            value = pairs
    if not isinstance(value, dict):
        raise ValueError("expected a mapping of host pattern to address")
    result = []
    for pattern, addr in value.items():
        try:
            ipaddress.ip_address(addr)
        except ValueError:
            raise ValueError(f"{addr!r} (for {pattern!r}) is not an IP address") from None
        result.append((str(pattern).lower(), str(addr)))
    return result


def pinned_address(pins: list[tuple[str, str]], name: str) -> str | None:
    name = name.lower().rstrip(".")
    for pattern, addr in pins:
        if fnmatch.fnmatchcase(name, pattern):
            return addr
    return None


class HostResolveResolver(CachingThreadedResolver):
    """Answers pinned names from ``HOST_RESOLVE``; everything else as Scrapy does, with a
    ``DNSCACHE_TTL`` on cached answers and ``DNS_TIMEOUT`` per lookup (the crawler-anatomy notes: cache
    DNS, resolve asynchronously; failures count as host errors in the frontier).

    Built once per process from the process-level settings (Scrapy installs the
    resolver before any crawler's add-ons run).
    """

    def __init__(self, reactor: Any, cache_size: int, timeout: float, pins: list[tuple[str, str]],
                 ttl: float = 3600.0):
        super().__init__(reactor, cache_size, timeout)
        self.pins = pins
        self.ttl = ttl
        self._expires: dict[str, float] = {}  # name -> when its cached answer goes stale

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> HostResolveResolver:
        settings = crawler.settings
        cache_size = settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0
        pins = parse_host_resolve(settings.get("HOST_RESOLVE"))
        return cls(reactor, cache_size, settings.getfloat("DNS_TIMEOUT"), pins, settings.getfloat("DNSCACHE_TTL"))

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> defer.Deferred[str]:
        addr = pinned_address(self.pins, name)
        if addr is not None:
            return defer.succeed(addr)
        # Scrapy's cache keeps an answer for the whole crawl; ours goes stale after DNSCACHE_TTL.
        if time.monotonic() >= self._expires.get(name, float("inf")):
            dnscache.pop(name, None)
            del self._expires[name]
        fresh = name not in dnscache
        d = super().getHostByName(name, timeout)
        if fresh and self.ttl:
            d.addCallback(self._stamp, name)
        return d

    def _stamp(self, result: Any, name: str) -> Any:
        self._expires[name] = time.monotonic() + self.ttl
        if len(self._expires) > 2 * max(1, dnscache.limit or 0):
            # Names the cache has since dropped (it keeps DNSCACHE_SIZE): their stamps go too.
            self._expires = {n: t for n, t in self._expires.items() if n in dnscache}
        return result
