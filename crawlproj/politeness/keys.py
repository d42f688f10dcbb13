"""Politeness keys: which queue a host's URLs wait in, and which server they count against (pure).

``FRONTIER_KEY`` names the key: the host itself, its registrable domain (approximate), or
its IP address (hosts sharing a server share its politeness). With ``PER_IP_CONCURRENCY``
each key also belongs to the group of its address. Either way the host's address must be
known before its URLs are queued: until it is, they wait here.
"""

from __future__ import annotations

from typing import Any

#: (key, group or None, level, entry): an entry ready to be pushed to the frontier.
Ready = tuple[str, Any, int, dict]


def host_key(host: str, mode: str = "host") -> str:
    """The politeness key of a host: itself, or its registrable domain (approximate)."""
    if mode == "domain":
        labels = host.split(".")
        # Two-level public suffixes such as co.jp and ac.uk keep three labels.
        keep = 3 if len(labels) >= 3 and len(labels[-2]) <= 3 and len(labels[-1]) == 2 else 2
        return ".".join(labels[-keep:])
    return host


class PolitenessKeys:
    """Keys and groups by host, and the entries waiting for their host's address."""

    def __init__(self, mode: str = "host", per_ip: int = 0) -> None:
        self.mode, self.per_ip = mode, per_ip
        self.addresses: dict[str, str] = {}  # host -> address (or the host, if unresolvable)
        self._waiting: dict[str, list[tuple[int, dict]]] = {}  # host -> (level, entry)
        self.waiting = 0  # entries waiting for an address

    def key_of(self, host: str) -> str:
        return self.addresses.get(host, host) if self.mode == "ip" else host_key(host, self.mode)

    def admit(self, host: str, level: int, entry: dict) -> tuple[list[Ready], bool]:
        """The entries ready to push, and whether the host's address must now be looked up
        (the first entry of a host whose address is needed and not known)."""
        if self.mode != "ip" and not self.per_ip:
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
        return host_key(host, self.mode), address, level, entry  # the per-IP cap counts keys per address
