"""The operator's opt-out list (the Waseda crawler's complaint desk: most complaints asked the crawler to stop).

One entry a line (``#`` starts a comment):

* ``example.org`` or ``*.example.org``: that host and every host under it;
* ``http://example.org/private/`` (anything with a scheme): URLs starting with it.

:class:`OptOutList` is the matching (pure). :class:`OptOutSource` reads a file
(``OPT_OUT_FILE``) and, in distributed mode, a Redis set of the same lines,
again whenever the file's modification time changes or the set's size does,
so the list is hot-reloaded without a restart. Through :class:`OptOutGate` the frontier
refuses new URLs the list matches and drops queued ones when they come up (a request
already in flight finishes).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

logger = logging.getLogger(__name__)


class OptOutList:
    """Hosts (with their subdomains) and URL prefixes never to fetch."""

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self.domains: set[str] = set()
        prefixes = []
        for raw in entries:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if "://" in line:
                prefixes.append(line)
            else:
                self.domains.add(line.lower().removeprefix("*.").strip(".").split(":")[0])
        self.prefixes = tuple(sorted(prefixes))

    def __len__(self) -> int:
        return len(self.domains) + len(self.prefixes)

    def rule_for(self, url: str, host: str) -> str | None:
        """The entry that excludes ``url`` (on ``host``), or None."""
        if self.domains:
            labels = host.lower().rstrip(".").split(".")
            for i in range(len(labels)):
                domain = ".".join(labels[i:])
                if domain in self.domains:
                    return domain
        if self.prefixes and url.startswith(self.prefixes):
            return next(p for p in self.prefixes if url.startswith(p))
        return None


class OptOutSource:
    """Where the list comes from: a file and/or a Redis set; :meth:`reload` re-reads on change."""

    _UNREAD = object()

    def __init__(self, path: str = "", redis=None, key: str = "") -> None:  # noqa: ANN001 - redis.Redis
        self.path = path
        self.redis = redis
        self.key = key
        self._file_stamp: object = self._UNREAD
        self._file_lines: list[str] = []
        self._members: tuple[str, ...] | None = None
        self.current = OptOutList()

    def reload(self) -> OptOutList | None:
        """The new list if the file or the set changed since the last call, else None."""
        changed = False
        if self.path:
            try:
                info = os.stat(self.path)
                stamp: object = (info.st_mtime_ns, info.st_size)
            except FileNotFoundError:
                stamp = None  # no file (yet) is an empty list, not an error
            if stamp != self._file_stamp:
                self._file_stamp, changed = stamp, True
                self._file_lines = []
                if stamp is not None:
                    with open(self.path, encoding="utf-8", errors="replace") as fh:
                        self._file_lines = fh.read().splitlines()
        if self.redis is not None:
            members = tuple(sorted(m.decode("utf-8", "replace") if isinstance(m, bytes) else m
                                   for m in self.redis.smembers(self.key)))
            if members != self._members:
                self._members, changed = members, True
        if not changed:
            return None
        self.current = OptOutList([*self._file_lines, *(self._members or ())])
        return self.current


class OptOutGate:
    """The frontier's use of the list: :meth:`refuses` a URL the list excludes (counting it
    under the caller's stat and logging each excluded host once), and :meth:`reload_if_due`
    re-reads the source every ``every`` seconds (an unreadable list keeps the last good one)."""

    def __init__(self, source: OptOutSource, every: float, stats: Any, clock: Callable[[], float] = time.monotonic):
        self.source, self.every, self.stats, self.clock = source, every, stats, clock
        self._read_at = float("-inf")
        self._logged: set[str] = set()  # hosts whose exclusion was logged since the list changed

    def refuses(self, url: str, host: str, stat: str) -> bool:
        rule = self.source.current.rule_for(url, host)
        if rule is None:
            return False
        self.stats.inc_value(stat)
        if host not in self._logged:
            self._logged.add(host)
            logger.warning("opt-out: %s is excluded (entry %r); its queued URLs are dropped", host, rule)
        return True

    def reload_if_due(self) -> None:
        if self.clock() - self._read_at >= self.every:
            self.reload()

    def reload(self) -> None:
        self._read_at = self.clock()
        try:
            fresh = self.source.reload()
        except Exception as exc:  # noqa: BLE001 - an unreadable list keeps the last good one
            logger.error("opt-out list unreadable, keeping the last one: %s", exc)
            return
        if fresh is not None:
            self._logged.clear()
            self.stats.set_value("frontier/opt_out_entries", len(fresh))
            logger.info("opt-out list: %d entries", len(fresh))
