"""A crawl's order on a link graph, simulated with the frontier's own parts (pure: no Scrapy, no I/O).

The real :class:`~crawlproj.frontier.tiers.TwoTierFrontier` and
:class:`~crawlproj.ordering.prioritizer.Prioritizer`, fed as the frontier scheduler and the
ordering middleware feed them (a page counts once as a backlink, OPIC shares of the cash a
page arrived with, a link leaving its host weighing ``BACKLINKS_OTHER_HOST_WEIGHT`` in-links,
promotion on link and on refill), under a simulated clock: ``concurrency``
fetches at once, each taking ``latency`` seconds, each host resting ``interval`` seconds after
its fetch ends. Deterministic, so a test can hold an ordering's gain over breadth-first
without a real crawl's timing noise (the real bench, ``bench/ordering.py``, varies by about
0.01 of PageRank share from run to run).
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from crawlproj import defaults
from crawlproj.frontier.tiers import TwoTierFrontier
from crawlproj.ordering.importance import StaticScores
from crawlproj.ordering.prioritizer import Prioritizer
from .graph import SandboxWeb


def ordering_web_options(hosts: int = 200, pages: int = 25, tail: float = 0.8) -> list[str]:
    """The sandbox options of ``bench/ordering.py``'s web: ``hosts`` hosts of ``pages`` mean pages
    (Zipf sizes), preferential links (``tail``: the share that go to any page), five topics."""
    return ["--hosts", str(hosts), "--pages", str(pages), "--power-law", "1.0", "--importance",
            "--importance-tail", str(tail), "--out-links", "12", "--cross-host", "0.3",
            "--topics", "5", "--no-robots-mix", "--seed", "3"]


def followed_links(web: SandboxWeb, pages: set[str]) -> dict[str, list[str]]:
    """Each fetchable page's out-links a correct crawler follows, in page order."""
    index = {web.url(h, k): (h, k) for h in web.hosts for k in range(web.size(h))}
    out = {}
    for url in pages:
        page = web.page(*index[url])
        out[url] = [] if page.meta_nofollow else [link.target for link in page.links
                                                  if not link.nofollow and link.target in pages]
    return out


def _fingerprint(url: str) -> int:
    return int.from_bytes(hashlib.blake2b(url.encode(), digest_size=8).digest(), "little")


def simulate_order(links: Mapping[str, Sequence[str]], seeds: Sequence[str], spec: str, budget: int, *,
                   levels: int = 8, concurrency: int = 16, interval: float = 0.1, latency: float = 0.01,
                   scores: Mapping[str, float] | None = None, robots: bool = True,
                   other_host_weight: int = defaults.BACKLINKS_OTHER_HOST_WEIGHT) -> list[str]:
    """The first ``budget`` pages a crawl from ``seeds`` fetches, in order, under ordering
    ``spec`` (``PRIORITIZER``'s syntax; ``scores`` for the ``scores`` ordering). ``links``:
    each page's out-links (a page missing from it cannot be fetched and is skipped).
    ``robots``: a host's first visit fetches its robots.txt, and the page it was handed out for
    is sent back to wait its turn again, as the robots.txt middleware does.
    ``other_host_weight``: what a link from another host counts as in-links (backlinks)."""
    prioritizer = Prioritizer(levels, spec, StaticScores(dict(scores)) if scores is not None else None)
    dynamic = prioritizer.dynamic

    def relevel(key: str, level: int, entry: dict) -> int:
        url = entry["url"]
        return prioritizer.relevel(_fingerprint(url), url, key, entry, level)

    frontier = TwoTierFrontier(levels=levels, active_target=3 * concurrency, relevel=relevel if dynamic else None)
    seen: set[str] = set()
    visited: set[str] = set()  # hosts whose robots.txt was fetched

    def enqueue(url: str, meta: dict) -> None:
        host, fp = urlsplit(url).hostname or "", _fingerprint(url)
        if url in seen:
            if dynamic:
                prioritizer.admit(fp, url, host, meta, new=False)
                better = prioritizer.promote(fp, url, host, meta)
                if better is not None:
                    frontier.push(host, {"url": url, "meta": dict(meta), "priority": 0}, better)
            return
        seen.add(url)
        if dynamic:
            prioritizer.admit(fp, url, host, meta, new=True)
        level = prioritizer.level(fp, url, host, meta)
        if dynamic:
            prioritizer.queued(fp, level)
        frontier.push(host, {"url": url, "meta": dict(meta), "priority": 0}, level)

    for seed in seeds:
        enqueue(seed, {"depth": 0})
    order: list[str] = []
    flights: list[tuple[float, int, str, str, dict]] = []  # (done at, seq, key, url: "" for robots.txt, meta)
    now, seq = 0.0, 0
    while len(order) < budget:
        while len(flights) < concurrency:
            popped = frontier.pop(now)
            if popped is None:
                break
            key, entry = popped
            url, meta = entry["url"], entry["meta"]
            fp = _fingerprint(url)
            if dynamic and not prioritizer.dequeued(fp):
                frontier.release(key, now)  # a promoted copy already went
                continue
            if dynamic:
                prioritizer.take(fp, key, meta)
            seq += 1
            if robots and key not in visited:  # this visit fetches robots.txt; the page waits its turn again
                visited.add(key)
                heapq.heappush(flights, (now + latency, seq, key, "", {**meta, "url": url}))
            else:
                heapq.heappush(flights, (now + latency, seq, key, url, meta))
        if not flights:
            due = frontier.next_due()
            if due is None:
                break  # nothing left to fetch
            now = max(now, due)
            continue
        now, _, key, url, meta = heapq.heappop(flights)
        frontier.release(key, now + interval)
        if not url:  # robots.txt fetched: the page is sent back, and the frontier scheduler takes it so
            url = meta.pop("url")
            fp = _fingerprint(url)
            if dynamic:
                prioritizer.give_back(fp, key, meta)
            level = prioritizer.level(fp, url, key, meta)
            if dynamic:
                prioritizer.queued(fp, level)
            frontier.push(key, {"url": url, "meta": meta, "priority": 0}, level, again=True)
            continue
        if url not in links:
            continue
        order.append(url)
        targets = list(dict.fromkeys(links[url]))  # one backlink per page
        share = meta.get("opic_cash", 0.0) / len(targets) if targets else 0.0
        for target in targets:
            link = {"depth": meta.get("depth", 0) + 1, "opic_share": share}
            if other_host_weight > 1 and urlsplit(target).hostname != key:
                link["backlink_weight"] = other_host_weight
            enqueue(target, link)
    return order
