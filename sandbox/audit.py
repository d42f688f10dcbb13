"""The server-side politeness report (pure logic over the sandbox's request log).

Politeness is judged at the server, never by the crawler's own account. For
each host the report gives:

* ``min_gap``: the smallest idle time between one request's finish and the
  next request's arrival (what "next allowed = finish + interval" promises);
* ``min_start_gap``: the smallest time between two arrivals (what Scrapy's
  ``DOWNLOAD_DELAY`` promises);
* ``max_concurrency``: the most requests in progress at once.

Given an interval (one number, or one per host), it counts gaps below it, on
the chosen basis (``idle`` or ``start``), and hosts that ever had more than
one request in progress. ``tolerance`` absorbs clock granularity only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Record:
    """One request as the server saw it (times in seconds, one clock)."""

    host: str
    path: str
    arrival: float
    finish: float
    status: int = 200
    connection: int = 0
    bytes: int = 0
    address: str = ""  # the local address it arrived at (hostile structures' pins differ)


def first_arrival(records: Iterable[Record]) -> float:
    """When the first request reached the server: the start of a crawl's counted window."""
    return min((r.arrival for r in records), default=0.0)


def pages_in_window(records: list[Record], seconds: float) -> int:
    """Pages answered 200 (robots.txt aside) that arrived within ``seconds`` of the first request,
    on the server's clock: the same window for every crawler compared."""
    start = first_arrival(records)
    return sum(1 for r in records if r.path != "/robots.txt" and r.status == 200 and r.arrival < start + seconds)


def max_overlap(spans: Iterable[tuple[float, float]]) -> int:
    """Most intervals [start, end) open at one time."""
    events = []
    for start, end in spans:
        events.append((start, 1))
        events.append((end, -1))
    events.sort(key=lambda e: (e[0], e[1]))  # an end at t closes before a start at t opens
    best = cur = 0
    for _, delta in events:
        cur += delta
        best = max(best, cur)
    return best


def address_report(records: Iterable[Record], window: float = 1.0) -> dict[str, dict]:
    """Per local address (a server's IP, all its host names together): requests, the most that
    arrived within any ``window`` seconds, and the shortest gap between two arrivals."""
    by_address: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r.address:
            by_address[r.address].append(r.arrival)
    out = {}
    for address, arrivals in sorted(by_address.items()):
        arrivals.sort()
        most, first = 0, 0
        for last, at in enumerate(arrivals):
            while at - arrivals[first] >= window:
                first += 1
            most = max(most, last - first + 1)
        gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
        out[address] = {"requests": len(arrivals), "max_per_window": most, "window": window,
                        "min_start_gap": round(min(gaps), 6) if gaps else None}
    return out


def politeness_report(
    records: Iterable[Record],
    interval: float | Mapping[str, float] | None = None,
    basis: str = "idle",
    tolerance: float = 0.001,
) -> dict:
    """Per-host gaps and concurrency, and violations against ``interval``."""
    if basis not in ("idle", "start"):
        raise ValueError(f"basis must be 'idle' or 'start', not {basis!r}")
    records = list(records)
    by_host: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_host[r.host].append(r)
    hosts: dict[str, dict] = {}
    gap_violations = concurrency_violations = 0
    for host, recs in sorted(by_host.items()):
        recs.sort(key=lambda r: r.arrival)
        idle = [b.arrival - a.finish for a, b in zip(recs, recs[1:])]
        start = [b.arrival - a.arrival for a, b in zip(recs, recs[1:])]
        conc = max_overlap((r.arrival, r.finish) for r in recs)
        want = interval.get(host) if isinstance(interval, Mapping) else interval
        below = 0
        short: list[dict] = []
        if want is not None:
            gaps = idle if basis == "idle" else start
            # Each short gap named by the requests on either side: a violation that shows only
            # under load says which answer it followed (one the client cut off, a redirect...).
            short = [{"gap": round(g, 6), "after": f"{a.path} ({a.status}, {a.bytes} bytes)", "before": b.path}
                     for g, a, b in zip(gaps, recs, recs[1:]) if g < want - tolerance]
            below = len(short)
        gap_violations += below
        concurrency_violations += conc > 1
        hosts[host] = {
            "requests": len(recs),
            "min_gap": round(min(idle), 6) if idle else None,
            "min_start_gap": round(min(start), 6) if start else None,
            "max_concurrency": conc,
            "connections": len({r.connection for r in recs}),
            "interval": want,
            "gap_violations": below,
            "short_gaps": short[:5],
            "not_modified": sum(1 for r in recs if r.status == 304),
        }
    gaps = [h["min_gap"] for h in hosts.values() if h["min_gap"] is not None]
    start_gaps = [h["min_start_gap"] for h in hosts.values() if h["min_start_gap"] is not None]
    return {
        "requests": sum(h["requests"] for h in hosts.values()),
        "hosts": len(hosts),
        "basis": basis,
        "min_gap": min(gaps) if gaps else None,
        "min_start_gap": min(start_gaps) if start_gaps else None,
        "max_concurrency": max((h["max_concurrency"] for h in hosts.values()), default=0),
        "interval_violations": gap_violations,
        "concurrency_violations": concurrency_violations,
        "violations": gap_violations + concurrency_violations,
        "not_modified": sum(h["not_modified"] for h in hosts.values()),
        "per_address": address_report(records),
        "per_host": hosts,
    }
