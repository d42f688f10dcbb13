"""Politeness keys: which queue a host's URLs wait in, and which server they count against (pure).

``FRONTIER_KEY`` names the key: the host itself, its registered domain (the public suffix
list), or its IP address (hosts sharing a server share its politeness). With
``PER_IP_CONCURRENCY`` or ``PER_IP_RATE`` each key also belongs to the group of its address.
Either way the host's address must be known before its URLs are queued: until it is, they
wait here.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import Any

import tldextract

#: (key, group or None, level, entry): an entry ready to be pushed to the frontier.
Ready = tuple[str, Any, int, dict]

# The public suffix list bundled with tldextract (never fetched: the crawl may have no other
# network than the one it crawls), private suffixes included: each blogspot.com or github.io
# name is its own registrant's, as a link farm's subdomains are not.
_SUFFIXES = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True)


@lru_cache(maxsize=16_384)
def registered_domain(host: str) -> str:
    """The registered domain of ``host`` (one label under its public suffix): ``a.b.example.co.uk``
    -> ``example.co.uk``. A name under no listed suffix (``.test``, ``.internal``) keeps its last
    two labels; an IP address is its own domain."""
    host = host.rstrip(".").lower()
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    parts = _SUFFIXES.extract_str(host)
    if parts.suffix and parts.domain:
        return f"{parts.domain}.{parts.suffix}"
    return ".".join(host.split(".")[-2:])


def host_key(host: str, mode: str = "host") -> str:
    """The politeness key of a host: itself, or its registered domain."""
    return registered_domain(host) if mode == "domain" else host


class PolitenessKeys:
    """Keys and groups by host, and the entries waiting for their host's address."""

    def __init__(self, mode: str = "host", per_ip: int = 0, per_ip_rate: float = 0.0) -> None:
        self.mode, self.per_ip, self.per_ip_rate = mode, per_ip, per_ip_rate
        self.addresses: dict[str, str] = {}  # host -> address (or the host, if unresolvable)
        self._waiting: dict[str, list[tuple[int, dict]]] = {}  # host -> (level, entry)
        self.waiting = 0  # entries waiting for an address

    def key_of(self, host: str) -> str:
        return self.addresses.get(host, host) if self.mode == "ip" else host_key(host, self.mode)

    def admit(self, host: str, level: int, entry: dict) -> tuple[list[Ready], bool]:
        """The entries ready to push, and whether the host's address must now be looked up
        (the first entry of a host whose address is needed and not known)."""
        if self.mode != "ip" and not self.per_ip and not self.per_ip_rate:
            return [(host_key(host, self.mode), None, level, entry)], False
        address = self.addresses.get(host)
        if address is not None:
            return [self._ready(host, address, level, entry)], False
        waiting = self._waiting.setdefault(host, [])
        waiting.append((level, entry))
        self.waiting += 1
        return [], len(waiting) == 1

    def resolved(self, host: str, address: str) -> list[Ready]:
        """``host`` is at ``address`` (its name, if it could not be resolved: the fetch
        reports the DNS error): the entries that waited for it."""
        self.addresses[host] = address
        waited = self._waiting.pop(host, [])
        self.waiting -= len(waited)
        return [self._ready(host, address, level, entry) for level, entry in waited]

    def _ready(self, host: str, address: str, level: int, entry: dict) -> Ready:
        if self.mode == "ip":
            return address, None, level, entry
        return host_key(host, self.mode), address, level, entry  # the per-IP limits count keys per address
