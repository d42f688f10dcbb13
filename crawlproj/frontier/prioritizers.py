"""Prioritizers: which front-tier level (0 = most important) a request goes to."""

from __future__ import annotations

from scrapy import Request


class BreadthFirst:
    """Level = hops from the seed (capped at the last level): breadth-first order.

    A request with a positive Scrapy ``priority`` (robots.txt, retries of seeds)
    goes to level 0.
    """

    def __init__(self, levels: int) -> None:
        self.levels = levels

    def level(self, request: Request) -> int:
        if request.priority > 0:
            return 0
        return min(int(request.meta.get("depth", 0)), self.levels - 1)


class ByRequestPriority:
    """Level from Scrapy's ``Request.priority``: higher priority, lower level.

    Priority p maps to level ``(levels - 1) // 2 - p``, clamped, so priority 0 is
    the middle level and each step up or down moves one level.
    """

    def __init__(self, levels: int) -> None:
        self.levels = levels

    def level(self, request: Request) -> int:
        return min(max((self.levels - 1) // 2 - request.priority, 0), self.levels - 1)
