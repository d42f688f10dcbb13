"""The operator's opt-out list (seed 004's complaint desk: most complaints asked the crawler to stop).

One entry a line (``#`` starts a comment):

* ``example.org`` or ``*.example.org``: that host and every host under it;
* ``http://example.org/private/`` (anything with a scheme): URLs starting with it.

:class:`OptOutList` is the matching (pure). :class:`OptOutSource` reads a file
(``OPT_OUT_FILE``) and, in distributed mode, a Redis set of the same lines,
again whenever the file's modification time changes or the set's size does,
so the list is hot-reloaded without a restart. The frontier drops queued URLs
it matches when they come up (a request already in flight finishes).
"""

from __future__ import annotations

import os
from collections.abc import Iterable


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
