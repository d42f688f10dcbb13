"""The frontier's interface: what :class:`~crawlproj.frontier.scheduler.FrontierScheduler`
needs of the queues it drives (declared as Scrapy declares ``QueueProtocol``)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Frontier(Protocol):
    """Queues of entries (request dicts) by politeness key, handed out one key at a time.

    Promises, for any implementation:

    * :meth:`pop` returns an entry only for a key that is due (``now`` at or past its
      next-allowed time and any :meth:`defer`) and has no entry in flight; the key is then
      in flight until :meth:`release`.
    * :meth:`release` ends the key's flight; it may go again from ``next_allowed``. With
      ``refund``, its request never reached the network: its server's rate slot is given back.
    * :meth:`next_due` is the earliest time a queued key could be popped (None: nothing
      queued, or only keys in flight); the scheduler sets its wake-up timer by it.
    * ``push(..., again=True)``: an entry handed out and sent back unfetched; a frontier with
      tiers keeps its key active rather than queueing it behind keys not yet visited.
    * With ``group_cap`` > 0, at most that many keys of one group (:meth:`set_group`,
      a server's address) are in flight at once.
    * ``reprioritises``: whether the frontier asks ``relevel`` (given when it is built)
      for an entry's level again as it moves up, so a URL that became more important
      waits less. A frontier that keeps each entry at its pushed level says False.
    """

    reprioritises: bool
    group_cap: int
    in_flight: Mapping[Hashable, float]  # key -> when it was popped
    next_allowed: Mapping[Hashable, float]  # key -> when it may go again (local view)
    back: Mapping[Hashable, Any]  # the active keys
    hold_expired: int  # times a focus hold (off-topic levels held back) ran out

    def __len__(self) -> int: ...

    @property
    def front_len(self) -> int: ...

    @property
    def back_len(self) -> int: ...

    def push(self, key: Hashable, entry: Any, level: int = 0, again: bool = False) -> None: ...

    def pop(self, now: float) -> tuple[Hashable, Any] | None: ...

    def release(self, key: Hashable, next_allowed: float, refund: bool = False) -> None: ...

    def defer(self, key: Hashable, until: float) -> None: ...

    def set_group(self, key: Hashable, group: Hashable) -> None: ...

    def next_due(self) -> float | None: ...

    def has_pending(self) -> bool: ...

    def due_keys(self, now: float) -> int: ...

    def key_state(self, key: Hashable, now: float) -> dict: ...
