"""Budgets per registered domain (pure: no Scrapy, no Twisted, no I/O but the overflow's queues).

A link farm names hosts without end under one registered domain (``s1.farm.example``,
``s2.farm.example``, ...); ``MAX_PAGES_PER_HOST`` bounds each name, not the farm. As
Heritrix and BUbiNG do, the crawl also budgets each registered domain:

* ``DOMAIN_MAX_HOSTS``: host names admitted per domain over the crawl. A link to one more
  host of a domain that has its count is dropped before the URL-seen filter, so it costs
  neither memory nor a lookup of the host's address.
* ``MAX_PAGES_PER_DOMAIN``: new URLs admitted per domain.
* ``DOMAIN_ACTIVE_HOSTS``: hosts of one domain with URLs in the frontier at once. URLs of
  the domain's further hosts wait in its overflow (a FIFO from ``queue_factory``: on disk when
  the frontier spills) and come in as the domain's open hosts run dry, so a page naming
  50,000 new hosts leaves 50,000 entries on disk, not 50,000 hosts in the frontier.

The frontier scheduler reports each entry it queues (:meth:`DomainBudget.queue`) and each one
that leaves its queues (:meth:`DomainBudget.taken`); that is how a host is known to be open.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from ..politeness.keys import registered_domain

#: At most this many overflow entries move into the frontier per :meth:`DomainBudget.taken`,
#: so a domain's drain never holds the reactor.
DRAIN_BATCH = 256


class _Domain:
    __slots__ = ("hosts", "pages", "open", "overflow", "held")

    def __init__(self) -> None:
        self.hosts: set[str] = set()  # hosts admitted
        self.pages = 0  # new URLs admitted
        self.open = 0  # hosts with entries in the frontier
        self.overflow: Any = None  # (host, item) waiting for an open host to run dry
        self.held: tuple[str, Any] | None = None  # the overflow's head, taken out but not yet free to go


class DomainBudget:
    """Each registered domain's hosts, pages and open hosts (0 for a limit: none)."""

    def __init__(self, max_hosts: int = 0, max_pages: int = 0, active_hosts: int = 0,
                 queue_factory: Callable[[str], Any] = lambda name: deque()) -> None:
        self.max_hosts, self.max_pages, self.active_hosts = max_hosts, max_pages, active_hosts
        self.queue_factory = queue_factory
        self.domains: dict[str, _Domain] = {}
        self.open: dict[str, int] = {}  # host -> its entries in the frontier
        self.overflowed = 0  # entries waiting in overflows

    def admissible(self, host: str) -> bool:
        """Whether a URL of ``host`` may be considered at all: not when the host is new and its
        domain has admitted ``max_hosts`` hosts already (asked before the URL-seen filter)."""
        if not self.max_hosts:
            return True
        domain = self.domains.get(registered_domain(host))
        return domain is None or len(domain.hosts) < self.max_hosts or host in domain.hosts

    def admit(self, host: str) -> bool:
        """Count a new URL of ``host`` (its host among its domain's): False when the domain has
        admitted ``max_pages`` URLs already."""
        domain = self._domain(host)
        if self.max_pages and domain.pages >= self.max_pages:
            return False
        domain.pages += 1
        if self.max_hosts:
            domain.hosts.add(host)
        return True

    def queue(self, host: str, item: Any, force: bool = False) -> list[Any]:
        """``item`` (an entry of ``host``) is to be queued: the items to queue now, which are
        ``[item]``, or none while ``item`` waits in its domain's overflow. ``force`` (a retry, a
        request sent back after its robots.txt) opens the host even past ``active_hosts``."""
        if not self.active_hosts:
            return [item]
        if host in self.open:
            self.open[host] += 1
            return [item]
        domain = self._domain(host)
        if not force and (domain.open >= self.active_hosts or domain.held is not None
                          or (domain.overflow is not None and len(domain.overflow))):
            if domain.overflow is None:
                domain.overflow = self.queue_factory(f"domain:{registered_domain(host)}")
            domain.overflow.append((host, item))
            self.overflowed += 1
            return []
        domain.open += 1
        self.open[host] = 1
        return [item]

    def taken(self, host: str) -> list[Any]:
        """An entry of ``host`` left the frontier (handed out or dropped): the overflow items that
        may be queued now (its host may have run dry)."""
        left = self.open.get(host, 0) - 1
        if left < 0:  # not counted (no overflow, or queued before a resume): nothing to do
            return []
        domain = self.domains[registered_domain(host)]
        if left:
            self.open[host] = left
        else:
            del self.open[host]
            domain.open -= 1
        return self._drain(domain) if domain.overflow is not None else []

    def _drain(self, domain: _Domain) -> list[Any]:
        """Overflow items to queue, in order: those of open hosts, and of a new host while fewer
        than ``active_hosts`` are open (at most :data:`DRAIN_BATCH` a call)."""
        out: list[Any] = []
        while len(out) < DRAIN_BATCH:
            if domain.held is not None:
                (host, item), domain.held = domain.held, None
            elif len(domain.overflow):
                host, item = domain.overflow.popleft()
            else:
                break
            if host in self.open:
                self.open[host] += 1
            elif domain.open < self.active_hosts:
                domain.open += 1
                self.open[host] = 1
            else:
                domain.held = (host, item)  # its turn comes when an open host runs dry
                break
            out.append(item)
        self.overflowed -= len(out)
        return out

    def _domain(self, host: str) -> _Domain:
        name = registered_domain(host)
        domain = self.domains.get(name)
        if domain is None:
            domain = self.domains[name] = _Domain()
        return domain
