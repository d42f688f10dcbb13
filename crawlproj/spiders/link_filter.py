"""Which of a page's links become requests: the spider's link filter."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from scrapy import signals

from .. import signals as crawl_signals
from ..content.extract import ExtractedLink
from ..extensions.console import note_refusal
from ..remote_calls import RemoteCalls
from ..scope import Scope
from ..urls import host_of

_UNASKED = object()


class LinkFilter:
    """A page's links (canonical, in page order) filtered down to the new ones to request:
    nofollow links (unless ``FOLLOW_NOFOLLOW``), a URL the page repeats, URLs the frontier's
    URL-seen filter already holds (:data:`crawlproj.signals.url_seen_test`; then all the rest
    in one round trip, :data:`~crawlproj.signals.urls_seen_test`), hosts the frontier no longer
    admits (:data:`~crawlproj.signals.host_admission_test`) and URLs out of scope. Each is
    counted; the page's stored links are all of them. The frontier's tests are asked for
    once, on first use (the frontier is built after the spider). The test of many URLs waits
    on the network: it runs on a thread of its own, not the reactor's (a remote filter's round
    trip a page held a worker's main thread 7% of its time in a two-worker crawl)."""

    def __init__(self, crawler: Any, follow_nofollow: bool, count: Callable[..., None]) -> None:
        self.crawler, self.follow_nofollow, self.count = crawler, follow_nofollow, count
        self._tests: dict[object, Any] = {}
        self._asking = RemoteCalls("urls-seen")
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    def _closed(self) -> None:
        self._asking.close(wait=False)

    def frontier_test(self, signal: object) -> Any:
        """The frontier's answer to ``signal`` (a test it offers), or None; asked once."""
        test = self._tests.get(signal, _UNASKED)
        if test is _UNASKED:
            answers = self.crawler.signals.send_catch_log(signal)
            test = self._tests[signal] = next((t for _, t in answers if callable(t)), None)
        return test

    def url_seen(self) -> Any:
        return self.frontier_test(crawl_signals.url_seen_test)

    async def follow(self, links: list[ExtractedLink], scope: Scope,
                     stop: Callable[[], Awaitable[bool]]) -> list[str] | None:
        """The URLs of ``links`` to request, in page order; None when ``stop()`` (awaited
        between links) says the crawl is closing."""
        seen, admissible = self.url_seen(), self.frontier_test(crawl_signals.host_admission_test)
        followed: dict[str, None] = {}
        counts: Counter[str] = Counter()  # counted once a page: a stats call a link was a tenth of the page's reactor time
        try:
            for link in links:
                if await stop():
                    return None
                if link.nofollow and not self.follow_nofollow:
                    counts["nofollow_skipped"] += 1
                    continue
                if link.url in followed:
                    continue
                if seen is not None and seen(link.url):
                    counts["links_seen"] += 1
                    continue
                if admissible is not None and not admissible(host_of(link.url)):
                    counts["links_over_domain_hosts"] += 1
                    continue
                reason = scope.refuses(link.url)
                if reason:
                    counts[f"out_of_scope/{reason}"] += 1
                    note_refusal(self.crawler, host_of(link.url), "scope", reason)
                    continue
                followed[link.url] = None
            many = self.frontier_test(crawl_signals.urls_seen_test)
            if many is not None and followed:  # one round trip for the page's new links
                for known in await self._asking.run(many, list(followed)):
                    del followed[known]
                    counts["links_seen"] += 1
        finally:
            for key, n in counts.items():
                self.count(key, n)
        return list(followed)
