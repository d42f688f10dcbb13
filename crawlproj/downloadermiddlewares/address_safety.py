"""Address safety: never fetch internal addresses (a downloader middleware, the first of them).

A request whose host resolves to a loopback, private, link-local, multicast, reserved or
unspecified address is refused before any connection is made, and counted as
``address_safety/refused/<kind>``; the rules are :mod:`crawlproj.politeness.address_safety`.
Redirects are new requests, so each hop is checked again; the address a response actually
came from is checked too. ``ADDRESS_ALLOWLIST`` (CIDR ranges) opens specific ranges.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from scrapy import Request
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached

from ..extensions.console import note_refusal
from ..errors import AddressRefused
from ..politeness.address_safety import parse_allowlist, unsafe_kind


class AddressSafetyMiddleware:
    """Refuses requests to hosts that resolve to non-public addresses unless allow-listed."""

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self.allowlist = parse_allowlist(crawler.settings.getlist("ADDRESS_ALLOWLIST"))

    @classmethod
    def from_crawler(cls, crawler: Any) -> AddressSafetyMiddleware:
        return cls(crawler)

    def _refuse(self, request: Request, host: str, address: str, kind: str) -> None:
        self.crawler.stats.inc_value(f"address_safety/refused/{kind}")
        note_refusal(self.crawler, host, "address_safety", f"{kind}: {address}")
        raise AddressRefused(f"{kind}: {host} is {address}; address safety refused {request.url}", kind)

    async def process_request(self, request: Request, spider: Any = None) -> None:
        host = urlparse_cached(request).hostname or ""
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            from twisted.internet import reactor

            try:  # the installed resolver: HOST_RESOLVE pins and Scrapy's DNS cache
                address = ipaddress.ip_address(await maybe_deferred_to_future(reactor.resolve(host)))
            except Exception:  # noqa: BLE001 - the download itself reports the DNS error
                return None
        kind = unsafe_kind(address, self.allowlist)
        if kind:
            self._refuse(request, host, str(address), kind)
        return None

    def process_response(self, request: Request, response: Any, spider: Any = None) -> Any:
        if response.ip_address is not None:
            kind = unsafe_kind(ipaddress.ip_address(str(response.ip_address)), self.allowlist)
            if kind:
                self._refuse(request, urlparse_cached(request).hostname or "", str(response.ip_address), kind)
        return response
