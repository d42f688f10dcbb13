"""Address safety's rules: which addresses are never fetched (pure; the downloader middleware
is :mod:`crawlproj.downloadermiddlewares.address_safety`).

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

