"""Which front-tier level a URL joins (0 = most important): the pluggable prioritizer (pure).

``PRIORITIZER`` names one ordering or a weighted mix: ``"bfs"`` (the default),
``"opic"``, ``"backlinks"``, ``"larger_sites"``, ``"topical"``, ``"scores"``,
``"depth"``, or a mix such as ``"opic:0.7,depth:0.3"``.

* ``bfs`` is breadth-first exactly: the level is the hop count.
* Anything else is scored: each component's score is divided by its reference,
  the score of an average URL (known in advance for a score file, the topic
  threshold and hops; for the online importances a running geometric mean of new
  URLs' scores), so components of any scale mix by their weights. The weighted
  sum ``s`` gives the level ``mid - floor(log2 s)``: an average URL sits at
  ``mid``, each doubling of ``s`` lifts it one level.
* Requests with a positive Scrapy priority (robots.txt, sitemaps) go to level 0.
* Revisits rank by freshness: :func:`freshness_level` (how overdue they are
  relative to their interval), always in the upper half, ahead of discovery.

Re-prioritising waiting URLs (OPIC cash and in-links grow while a URL waits),
without reordering the middle of a queue (the disk-spilled queues stay
append-only), in two lazy, O(1) ways:

* promote on link: when a new link lifts a waiting URL to a better level, a copy
  of its request joins that level; whichever copy comes up first is fetched and
  the others are skipped when they come up (:meth:`Prioritizer.promote`,
  :meth:`Prioritizer.dequeued`);
* promote on refill: the front tier asks :meth:`Prioritizer.relevel` for each
  entry it pulls, and an entry whose level has improved moves up instead.
"""

from __future__ import annotations

import math
from typing import Any

from .importance import Backlinks, Component, Depth, LargerSites, Opic, StaticScores, TopicScore
from .topical import topical_threshold

STATEFUL = {"opic": Opic, "backlinks": Backlinks, "larger_sites": LargerSites}
STATELESS = {"depth": Depth, "topical": TopicScore}
NAMES = ("bfs", "scores", *STATEFUL, *STATELESS)


def parse_spec(spec: str) -> list[tuple[str, float]]:
    """``"opic:0.7,depth:0.3"`` -> [("opic", 0.7), ("depth", 0.3)]; a bare name weighs 1."""
    parts = []
    for item in filter(None, (p.strip() for p in str(spec).split(","))):
        name, _, weight = item.partition(":")
        name = name.strip().lower()
        if name not in NAMES:
            raise ValueError(f"unknown ordering {name!r}: choose from {', '.join(NAMES)}")
        try:
            w = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"weight of {name!r} is not a number: {weight!r}") from None
        if w <= 0:
            raise ValueError(f"weight of {name!r} must be > 0")
        parts.append((name, w))
    if not parts:
        raise ValueError("no ordering given")
    if any(n == "bfs" for n, _ in parts) and len(parts) > 1:
        raise ValueError("bfs is an exact order and does not mix; mix 'depth' instead")
    return parts


def freshness_level(overdue: float, levels: int) -> int:
    """The level of a revisit ``overdue`` intervals late (0: just due): just due at the upper
    half's bottom, one level up at 1/8, 3/8 and 7/8 of an interval late (the top level)."""
    mid = max(0, levels // 2 - 1)
    return max(0, mid - int(math.log2(1.0 + 8.0 * max(0.0, overdue))))


class Prioritizer:
    """Levels for the frontier from a weighted mix of components (see the module docstring)."""

    def __init__(self, levels: int, spec: str = "bfs", scores: StaticScores | None = None,
                 mean_weight: float = 0.01) -> None:
        self.levels = levels
        self.mid = max(0, levels // 2 - 1)
        self.parts = parse_spec(spec)
        self.bfs = self.parts[0][0] == "bfs"
        self.components: list[tuple[Component, float]] = []
        for name, weight in ([] if self.bfs else self.parts):
            if name == "scores":
                if scores is None:
                    raise ValueError("the 'scores' ordering needs a score file (PRIORITY_SCORES_FILE)")
                component: Component = scores
            else:
                component = (STATEFUL.get(name) or STATELESS[name])()
            self.components.append((component, weight))
        self.weight = sum(w for _, w in self.components)
        self.dynamic = any(c.dynamic for c, _ in self.components)
        self.focused = any(c.name == "topical" for c, _ in self.components)
        self.means: list[float | None] = [None] * len(self.components)
        self.mean_weight = mean_weight
        self.promotions = 0
        # Dynamic orderings: fingerprint -> [best level queued, copies queued, fetched already]
        self.waiting: dict[int, list] = {}

    def replace(self, name: str, component: Component) -> None:
        """Swap the component called ``name`` (the distributed scheduler's shared tables)."""
        self.components = [(component if c.name == name else c, w) for c, w in self.components]

    # -- the frontier's calls ----------------------------------------------
    def admit(self, key: int, url: str, host: str, meta: dict, new: bool) -> None:
        """A link to ``url`` was found (``new``: never seen before)."""
        for component, _ in self.components:
            component.admit(key, host, meta, new)

    def take(self, key: int, host: str, meta: dict) -> None:
        """``url`` leaves the frontier (it is about to be fetched, or dropped)."""
        for component, _ in self.components:
            component.take(key, host, meta)

    def give_back(self, key: int, host: str, meta: dict) -> None:
        """``url`` was handed out and comes back unfetched: it waits again with the importance
        it had, and keeps gathering more (undoes :meth:`take`)."""
        for component, _ in self.components:
            component.give_back(key, host, meta)

    def level(self, key: int, url: str, host: str, meta: dict, priority: int = 0, learn: bool = True) -> int:
        """The level of a request; ``learn``: let its scores move the running means."""
        if priority > 0:
            return 0
        if meta.get("revisit"):
            return freshness_level(meta.get("revisit_overdue", 0.0), self.levels)
        if self.bfs:
            return min(max(int(meta.get("depth", 0)), 0), self.levels - 1)
        total = 0.0
        for i, (component, weight) in enumerate(self.components):
            s = component.score(key, url, host, meta)
            reference = component.reference
            if reference is None:  # learnt: a running mean of log scores
                log_mean = self.means[i]
                if learn and s > 0:
                    log_mean = self.means[i] = math.log(s) if log_mean is None else \
                        log_mean + self.mean_weight * (math.log(s) - log_mean)
                reference = math.exp(log_mean) if log_mean is not None else None
            if reference:
                total += weight * s / reference
        total /= self.weight
        if total <= 0:
            return self.levels - 1
        return min(max(self.mid - math.floor(math.log2(total)), 0), self.levels - 1)

    def relevel(self, key: int, url: str, host: str, entry: dict, level: int) -> int:
        """The level of a queued request now (promote on refill): lower only, never demoted."""
        meta = entry.get("meta") or {}
        now = self.level(key, url, host, meta, entry.get("priority", 0), learn=False)
        if now < level:
            self.promotions += 1
            record = self.waiting.get(key)
            if record is not None:
                record[0] = min(record[0], now)
            return now
        return level

    def queued(self, key: int, level: int) -> None:
        """A new URL was queued at ``level``, or one sent back unfetched (:meth:`give_back`)
        while copies of it still wait: dynamic orderings track it until it is dequeued."""
        if not self.dynamic:
            return
        record = self.waiting.get(key)
        if record is None:
            self.waiting[key] = [level, 1, False]
        else:  # sent back: not fetched after all, and one more copy waits
            record[0], record[1], record[2] = min(record[0], level), record[1] + 1, False

    def promote(self, key: int, url: str, host: str, meta: dict) -> int | None:
        """After a new link to a waiting URL: the better level it deserves now (queue a copy
        there), or None."""
        record = self.waiting.get(key)
        if record is None or record[2]:
            return None
        now = self.level(key, url, host, meta, learn=False)
        if now >= record[0]:
            return None
        record[0] = now
        record[1] += 1
        self.promotions += 1
        return now

    def dequeued(self, key: int) -> bool:
        """A queued copy of ``key`` came up: True to fetch it, False when another copy already went."""
        record = self.waiting.get(key)
        if record is None:
            return True
        record[1] -= 1
        fetch = not record[2]
        record[2] = True
        if record[1] <= 0:
            del self.waiting[key]
        return fetch

    # -- persistence ---------------------------------------------------------
    def state(self) -> dict[str, Any]:
        # ``waiting`` is not saved: a resume rebuilds it from the journal's pending entries.
        return {"spec": self.parts, "means": self.means,
                "components": {c.name: c.state() for c, _ in self.components if c.dynamic}}

    def restore(self, state: dict[str, Any]) -> int:
        """Take up a saved state (of the same spec); returns the URLs it holds."""
        if state.get("spec") != self.parts:
            return 0
        self.means = list(state.get("means") or self.means)
        saved = state.get("components") or {}
        for component, _ in self.components:
            if component.name in saved:
                component.restore(saved[component.name])
        return self.tracked()

    def tracked(self, exact: bool = False) -> int:
        """URLs the components hold; ``exact``: shared components count now, not from a recent count."""
        if exact:
            for component, _ in self.components:
                if hasattr(component, "recount"):
                    component.recount()
        return sum(len(c) for c, _ in self.components)


def build_prioritizer(settings, levels: int) -> Prioritizer:  # noqa: ANN001 - Scrapy Settings
    """The prioritizer ``PRIORITIZER`` names (with ``PRIORITY_SCORES_FILE`` for ``scores``)."""
    spec = settings.get("PRIORITIZER")
    path = settings.get("PRIORITY_SCORES_FILE")
    scores = StaticScores.from_file(path) if path and any(n == "scores" for n, _ in parse_spec(spec)) else None
    prioritizer = Prioritizer(levels, spec, scores)
    for component, _ in prioritizer.components:
        if component.name == "topical":  # an average relevant link sits at the middle level
            component.reference = topical_threshold(settings)
    return prioritizer
