"""The frontier's figures for the crawl stats and the dashboard (pure: read from a Frontier, no Scrapy)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from ..politeness.hosts import HELD, HostPoliteness
from ..politeness.keys import PolitenessKeys
from .protocol import Frontier


def frontier_figures(f: Frontier, now: float, spill: Any = None, overflow: int = 0) -> dict[str, Any]:
    """Queue sizes (front, back, the domains' overflow, in memory, on disk), active, in-flight and
    due keys, and how soon the next key is due, as ``frontier/<name>`` stats. The spill's disk
    entries include the overflow's."""
    on_disk = spill.disk_entries if spill is not None else 0
    due = f.next_due()
    queued = len(f) + overflow
    figures = {
        "frontier/queued": queued, "frontier/queued_front": f.front_len, "frontier/queued_back": f.back_len,
        "frontier/queued_overflow": overflow,
        "frontier/queued_disk": on_disk, "frontier/queued_memory": queued - on_disk,
        "frontier/spill_bytes": spill.disk_bytes if spill is not None else 0,
        "frontier/active_keys": len(f.back), "frontier/in_flight": len(f.in_flight),
        "frontier/due_keys": f.due_keys(now),
        "frontier/next_due_in": round(max(0.0, due - now), 3) if due is not None else None,
    }
    if f.hold_expired:
        figures["ordering/focus_waits_expired"] = f.hold_expired
    return figures


def host_rows(f: Frontier, hosts: HostPoliteness, keys: PolitenessKeys, names: Iterable[str],
              now: float) -> dict[str, dict]:
    """Each named host's politeness state for the dashboard: its key, the interval in force,
    the rule that set it and every rule's part, whether it is held back (suspended, parked,
    keep-alive pause) and for how long, its queue, its Crawl-delay."""
    out = {}
    for name in names:
        key = keys.key_of(name)
        state = f.key_state(key, now)
        row = {"key": key, **hosts.describe(key), **state}
        row["held"] = row["rule"] if row["rule"] in HELD and state.get("due_in", 0) > 0 else None
        out[name] = row
    return out


class RuleCounts:
    """Keys by the rule that set their current rest, as ``frontier/hosts_by_rule/<rule>``;
    a rule no key follows any more reads 0, not its last count."""

    def __init__(self) -> None:
        self._published: set[str] = set()

    def figures(self, rules: Iterable[str]) -> dict[str, int]:
        by_rule = Counter(rules)
        self._published.update(by_rule)
        return {f"frontier/hosts_by_rule/{rule}": by_rule[rule] for rule in self._published}
