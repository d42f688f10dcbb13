"""What the dashboard shows, computed from counters and events (pure: no Twisted, no I/O).

:class:`RateSeries` turns a growing page counter into pages/s over time;
:class:`HostBoard` keeps what the crawl's signals say about each host (last
status, address, robots.txt); :func:`snapshot` assembles one JSON-ready view
from the crawler's stats, the board and what other components say about hosts.
"""

from __future__ import annotations

import heapq
from collections import deque

from ..geo import locate

NOWHERE = locate(None)  # a host whose address is not known yet


class RateSeries:
    """Pages/s over time from a monotone counter sampled at each tick (``keep`` samples).

    Each sample is the rate over the last ``window`` seconds, so ticks shorter than the
    gaps between pages do not make a saw-tooth."""

    def __init__(self, keep: int = 600, window: float = 2.0) -> None:
        self.samples: deque[tuple[float, float]] = deque(maxlen=keep)
        self.window = window
        self._counts: deque[tuple[float, float]] = deque()

    @classmethod
    def ten_minutes(cls, tick_seconds: float) -> RateSeries:
        """A series keeping the last ten minutes of ticks ``tick_seconds`` apart."""
        return cls(keep=int(600 / max(tick_seconds, 0.1)))

    def tick(self, t: float, count: float) -> float:
        """Record ``count`` at time ``t``; returns the rate over the window before it."""
        while len(self._counts) > 1 and self._counts[1][0] <= t - self.window:
            self._counts.popleft()
        rate = 0.0
        if self._counts and t > self._counts[0][0]:
            rate = max(0.0, count - self._counts[0][1]) / (t - self._counts[0][0])
        self._counts.append((t, count))
        self.samples.append((t, rate))
        return rate

    def points(self) -> list[list[float]]:
        """The samples as the page plots them: [[time, pages/s], ...], rounded."""
        return [[round(t, 2), round(r, 3)] for t, r in self.samples]

    def recent(self, seconds: float = 10.0) -> float:
        """The mean rate over the last ``seconds``."""
        if not self.samples:
            return 0.0
        end = self.samples[-1][0]
        rates = [r for t, r in self.samples if t > end - seconds]
        return sum(rates) / len(rates)


def robots_state(status: int | None) -> str:
    """RFC 9309's reading of a robots.txt answer."""
    if status is None or status >= 500:
        return "disallow all (unreachable)"
    if status >= 400:
        return "allow all (absent)"
    return "rules" if 200 <= status < 300 else f"status {status}"


class HostBoard:
    """Per host: fetches, last status and time, address, errors, robots.txt state and time.

    Remembers the ``keep`` hosts heard from most recently (a broad crawl meets millions: about
    480 bytes each); ``seen`` counts every host it has heard of."""

    def __init__(self, keep: int = 10_000) -> None:
        self.hosts: dict[str, dict] = {}  # least recently heard of first
        self.keep = max(1, keep)
        self.seen = 0

    def _host(self, host: str) -> dict:
        row = self.hosts.pop(host, None)
        if row is not None:
            self.hosts[host] = row  # now the most recent
        else:
            self.seen += 1
            if len(self.hosts) >= self.keep:
                del self.hosts[next(iter(self.hosts))]
            row = self.hosts[host] = {"fetches": 0, "errors": 0, "last_status": None, "last_seen": 0.0, "ip": None,
                                      "location": NOWHERE, "robots_status": None, "robots_at": None,
                                      "robots_known": False}
        return row

    def response(self, host: str, status: int, ip: str | None, now: float) -> None:
        row = self._host(host)
        row["fetches"] += 1
        row["last_status"], row["last_seen"] = status, now
        if ip and ip != row["ip"]:  # looked up once per address, not at every snapshot
            row["ip"], row["location"] = ip, locate(ip)

    def error(self, host: str, kind: str, now: float) -> None:
        row = self._host(host)
        row["errors"] += 1
        row["last_status"], row["last_seen"] = kind, now

    def robots(self, host: str, status: int | None, now: float) -> None:
        row = self._host(host)
        row["robots_status"], row["robots_at"], row["robots_known"] = status, now, True

    def busiest(self, n: int) -> list[str]:
        """The ``n`` hosts seen most recently (the ones an operator is watching)."""
        return heapq.nlargest(n, self.hosts, key=lambda h: self.hosts[h]["last_seen"])

    def rows(self, hosts: list[str], now: float, described: dict[str, dict]) -> list[dict]:
        out = []
        for host in hosts:
            row = self.hosts[host]
            location = row["location"]
            out.append({
                "host": host, "ip": row["ip"], "location": location.label, "country": location.country,
                "fetches": row["fetches"], "errors": row["errors"], "last_status": row["last_status"],
                "robots": robots_state(row["robots_status"]) if row["robots_known"] else "not fetched",
                "robots_age": round(now - row["robots_at"], 1) if row["robots_at"] is not None else None,
                **described.get(host, {}),
            })
        return out

    def locations(self) -> dict[str, int]:
        """Servers (hosts) by location label."""
        counts: dict[str, int] = {}
        for row in self.hosts.values():
            label = row["location"].label
            counts[label] = counts.get(label, 0) + 1
        return counts


def errors_by_kind(stats: dict) -> dict[str, int]:
    """The crawl's errors as the console counts them (:func:`crawlproj.extensions.console.fetch_errors`): pages
    whose fetch failed for good, by kind, and robots.txt fetches that failed (their host is not
    crawled). A 4xx or 5xx answer is a page, stored (the statuses are counted apart), and the
    crawler's own refusals are not errors: the dashboard and the console say the same."""
    from ..extensions.console import fetch_errors

    return fetch_errors(stats)


def _rate(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def snapshot(stats: dict, series: RateSeries, board: HostBoard, hosts: list[str], described: dict[str, dict],
             now: float, **extra: object) -> dict:
    """One JSON-ready view of the crawl (``extra`` adds fields such as spider, worker, paused)."""
    g = stats.get
    checked = g("near_duplicates/checked", 0)
    duplicates = sum(v for k, v in stats.items() if k.startswith("near_duplicates/") and k != "near_duplicates/checked"
                     and isinstance(v, (int, float)))
    revisits = g("revisit/requests", 0)
    return {
        **extra,
        "pages": g("store/pages", 0),  # stored, as the console counts them
        "responses": g("response_received_count", 0),
        "items": g("item_scraped_count", 0),
        "pages_per_s": round(series.recent(), 3),
        "series": series.points(),
        "errors": errors_by_kind(stats),
        "frontier": {
            "queued": g("frontier/queued", 0), "memory": g("frontier/queued_memory", 0),
            "disk": g("frontier/queued_disk", 0), "front": g("frontier/queued_front", 0),
            "back": g("frontier/queued_back", 0), "spill_bytes": g("frontier/spill_bytes", 0),
            "active_hosts": g("frontier/active_keys", 0), "due_hosts": g("frontier/due_keys", 0),
            "in_flight": g("frontier/in_flight", 0),
        },
        "near_duplicates": {"checked": checked, "duplicates": duplicates, "rate": _rate(duplicates, checked)},
        "revisit": {"requests": revisits, "changed": g("revisit/changed", 0),
                    "not_modified": g("revisit/not_modified", 0), "tracked": g("revisit/tracked", 0),
                    # as the console counts them: a revisit's capture is not a new page
                    "new_pages": max(0, g("store/pages", 0) - g("revisit/visits", 0)),
                    "visits": g("revisit/visits", 0), "next_due_in": g("revisit/next_due_in"),
                    "change_rate": _rate(g("revisit/changed", 0), revisits)},
        "ordering": {"tracked": g("ordering/tracked", 0), "promotions": g("ordering/promotions", 0),
                     "harvest_rate": g("topical/harvest_rate"), "opt_out_dropped": g("frontier/opt_out_dropped", 0)},
        "renders": {"rendered": g("render/rendered", 0), "static": g("render/static_pages", 0),
                    "timeouts": g("render/timeouts", 0), "subrequests": g("render/subrequests", 0),
                    "samples": g("render/samples", 0), "sample_gains": g("render/sample_gains", 0),
                    "hosts_rendered_directly": g("render/hosts_direct", 0)},
        "memory": {"rss_bytes": g("process/rss_bytes", 0),
                   "growth_per_1000_pages": g("process/rss_growth_per_1000_pages"),
                   "browser_rss_bytes": g("render/browser_rss_bytes", 0)},
        "hosts": board.rows(hosts, now, described),
        "hosts_total": board.seen,
        "locations": board.locations(),
        **operations(stats, extra.get("time")),
    }


def operations(stats: dict, wall: float | None) -> dict:
    """What an operator's monitoring reads (and /metrics serves): bytes, responses by status
    class, hosts by the interval rule in force, the store's commit lag, dead letters and the
    completion estimate (:mod:`crawlproj.frontier.completion`)."""
    g = stats.get
    statuses: dict[str, int] = {}
    for name, value in stats.items():
        if name.startswith("downloader/response_status_count/") and isinstance(value, (int, float)):
            klass = name.rsplit("/", 1)[1][:1] + "xx"
            statuses[klass] = statuses.get(klass, 0) + int(value)
    last_commit = g("store/last_commit_at")
    estimate = None
    if g("frontier/estimate_seconds") is not None:
        estimate = {"seconds": g("frontier/estimate_seconds"), "low": g("frontier/estimate_low_seconds"),
                    "high": g("frontier/estimate_high_seconds"), "bound": g("frontier/estimate_bound"),
                    "tail_host": g("frontier/estimate_tail_host"), "growing": g("frontier/estimate_growing"),
                    "fetch_rate": g("frontier/estimate_fetch_rate"), "discovery": g("frontier/estimate_discovery"),
                    "unknown": g("frontier/estimate_unknown"), "tail_seconds": g("frontier/estimate_tail_seconds")}
    return {
        "bytes": g("downloader/response_bytes", 0),
        "statuses": dict(sorted(statuses.items())),
        "hosts_by_rule": {name.rsplit("/", 1)[1]: value for name, value in stats.items()
                          if name.startswith("frontier/hosts_by_rule/")},
        # The commit lag: how long rows have waited, since the last commit, while any wait.
        "store": {"commits": g("store/commits", 0), "pending": g("store/pending", 0),
                  "commit_lag_s": round(max(0.0, wall - last_commit), 3) if wall and last_commit and g(
                      "store/pending") else 0.0},
        "deadletters": g("deadletters/kept", 0),
        "estimate": estimate,
    }
