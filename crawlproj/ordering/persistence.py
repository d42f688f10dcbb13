"""The crawl ordering's state kept beside the frontier's journal, so a resumed crawl keeps it."""

from __future__ import annotations

import logging
import os
import pickle
import time
from typing import Any

logger = logging.getLogger(__name__)


class OrderingSnapshots:
    """Saves a prioritizer's importance state (OPIC cash, in-links, site sizes) to
    ``JOBDIR/frontier/ordering.pickle`` every ``every`` seconds and at close, atomically
    (a kill -9 leaves the last whole copy), and restores it when the crawl opens.
    Does nothing without a JOBDIR or for an ordering that keeps no state."""

    def __init__(self, prioritizer: Any, jobdir: str | None, every: float, clock: Any = time.monotonic) -> None:
        self.prioritizer, self.every, self.clock = prioritizer, every, clock
        self.path = os.path.join(jobdir, "frontier", "ordering.pickle") if jobdir else None
        self._saved = clock()

    @property
    def enabled(self) -> bool:
        return bool(self.path) and self.prioritizer.dynamic

    def restore(self) -> int | None:
        """URLs restored from the last save, or None when there was none."""
        if not self.enabled or not os.path.exists(self.path):
            return None
        with open(self.path, "rb") as fh:
            restored = self.prioritizer.restore(pickle.load(fh))
        logger.info("ordering state restored: %d URLs (%s)", restored, self.path)
        return restored

    def save_if_due(self) -> None:
        if self.clock() - self._saved >= self.every:
            self.save()

    def save(self) -> None:
        if not self.enabled:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        partial = self.path + ".partial"
        with open(partial, "wb") as fh:
            pickle.dump(self.prioritizer.state(), fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, self.path)
        self._saved = self.clock()
