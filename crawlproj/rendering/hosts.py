"""Which hosts are rendered directly, learnt from the pages' verdicts (pure)."""

from __future__ import annotations


class HostRenderMemory:
    """Switches a host between static-first and direct rendering, with hysteresis.

    A host starts static-first: each page is fetched statically and rendered only
    if its HTML needs it. After ``switch_after`` pages in a row needed rendering,
    the host's pages are rendered directly (one fetch each instead of two). A
    rendered page still reports whether its raw HTML needed the browser; after
    ``switch_after`` in a row that did not, the host goes back to static-first.
    """

    def __init__(self, switch_after: int = 3) -> None:
        self.switch_after = max(1, switch_after)
        self._direct: set[str] = set()
        self._streak: dict[str, int] = {}  # host -> verdicts in a row against its current mode

    def direct(self, host: str) -> bool:
        """Render this host's pages without a static fetch first."""
        return host in self._direct

    def record(self, host: str, needs: bool) -> str | None:
        """Add one page's verdict; return ``"direct"`` or ``"static"`` when the host switches."""
        direct = host in self._direct
        if needs == direct:  # agrees with the current mode
            self._streak.pop(host, None)
            return None
        streak = self._streak[host] = self._streak.get(host, 0) + 1
        if streak < self.switch_after:
            return None
        del self._streak[host]
        if direct:
            self._direct.discard(host)
            return "static"
        self._direct.add(host)
        return "direct"

    @property
    def direct_hosts(self) -> int:
        return len(self._direct)
