"""Address safety: never fetch internal addresses (a downloader middleware).

A crawler following arbitrary links can be pointed at internal services: a
link or a redirect to ``http://10.0.0.5/admin`` or to the cloud metadata
service ``169.254.169.254``. So, by default, a request whose host resolves to a
loopback, private, link-local, multicast, reserved or unspecified address is
refused before any connection is made, and counted as
``address_safety/refused/<kind>``. Redirects are new requests, so each hop is
checked again; the address a response actually came from is checked too.
``ADDRESS_ALLOWLIST`` (CIDR ranges) opens specific ranges: the ``sandbox``
profile allows loopback.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached

from ..console import note_refusal

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def unsafe_kind(address: Address, allowlist: list[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> str | None:
    """Why ``address`` must not be fetched (loopback, private, ...), or None (pure)."""
    if any(address in net for net in allowlist if net.version == address.version):
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return unsafe_kind(address.ipv4_mapped, allowlist)
    for kind in ("loopback", "link_local", "multicast", "unspecified", "reserved", "private"):
        if getattr(address, f"is_{kind}"):
            return kind
    if not address.is_global:
        return "not_global"  # shared address space (100.64/10) and the like
    return None


def parse_allowlist(values: list[str]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(v, strict=False) for v in values]


class AddressRefused(IgnoreRequest):
    """A request refused by address safety; ``kind`` is the reason class (loopback, private, ...)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


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
