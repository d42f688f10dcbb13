"""The system Chromium: where it is, and how much memory its processes hold (Linux /proc)."""

from __future__ import annotations

import os
import shutil

from ..extensions.memory import pss_bytes

#: Tried in order when CHROMIUM_PATH is empty (Debian's package, then PATH).
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser")
INSTALL_HINT = "sudo apt-get install -y --no-install-recommends chromium"


def find_chromium(configured: str = "") -> str | None:
    """The browser executable to launch: ``configured`` if given (and executable), else the
    first of :data:`CHROMIUM_CANDIDATES` found. Never Playwright's own download."""
    for candidate in ((configured,) if configured else CHROMIUM_CANDIDATES):
        path = candidate if os.sep in candidate else shutil.which(candidate)
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def descendants(root: int, excluding: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """Every process under ``root`` (children, their children, ...), from /proc; those in
    ``excluding`` and under them left out."""
    found, stack = [], [root]
    while stack:
        children = [pid for pid in _children(stack.pop()) if pid not in excluding]
        found += children
        stack += children
    return found


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for tid in _threads(pid):
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as fh:
                found += [int(x) for x in fh.read().split()]
    except OSError:
        pass
    return found


#: The nice value added by the ``low`` priority (and by ``idle`` where there is no SCHED_IDLE).
LOW_PRIORITY_NICE = 10


def browser_cpus(allowed: set[int], spare: int) -> set[int] | None:
    """The CPUs the browser may use: ``allowed`` but its first ``spare`` (None: all of them,
    when that would leave the browser none)."""
    if spare <= 0 or len(allowed) <= spare:
        return None
    return set(sorted(allowed)[spare:])


def lower_priority(pids: list[int] | set[int], priority: str, cpus: set[int] | None = None) -> None:
    """Lower the CPU priority of ``pids`` to ``priority`` (``idle``, ``low`` or ``normal``) and
    keep them on ``cpus`` (None: anywhere), every thread of each: a process's threads
    started before it was lowered do not inherit it, while threads and processes started
    later do (nice values, scheduling policies and affinity are inherited)."""
    for pid in pids:
        for tid in _threads(pid):
            try:
                if cpus is not None:
                    os.sched_setaffinity(tid, cpus)
                if priority == "idle" and hasattr(os, "SCHED_IDLE"):
                    os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
                elif priority != "normal":
                    os.setpriority(os.PRIO_PROCESS, tid,
                                   min(19, os.getpriority(os.PRIO_PROCESS, tid) + LOW_PRIORITY_NICE))
            except OSError:
                pass  # gone, or not ours


def _threads(pid: int) -> list[int]:
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return [pid]


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def browser_rss(root: int | None = None, names: tuple[str, ...] = ("chrom", "headless_shell")) -> int:
    """Bytes resident in the browser processes under ``root`` (this process by default).

    Sums the proportional set size (shared pages divided among their sharers, so
    the browser's many processes are not counted many times over) of every
    descendant whose name starts with one of ``names``: the browser, its
    renderers, GPU and utility processes.
    """
    return sum(pss_bytes(pid) for pid in descendants(root or os.getpid()) if _name(pid).startswith(names))
