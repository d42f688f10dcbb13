"""What the frontier's prioritizer needs from each fetched page (a spider middleware).

For every page it sees the page's links together (the spider yields them before
the page item, so the output is gathered first) and:

* sends each target once per page (a page counts once as a backlink);
* backlinks: marks each link leaving the page's host with ``meta["backlink_weight"]``
  (``BACKLINKS_OTHER_HOST_WEIGHT``): a link from another host is a vote, a site's own
  navigation is not much of one;
* OPIC: gives each link it lets through an equal share of the cash the page
  arrived with (``meta["opic_cash"]``, put there by the frontier at dequeue);
* topical crawling: scores the page's main text and each anchor against the
  topic, gives each link ``topic_score`` (:func:`~.topical.link_score`) and the
  count of irrelevant pages in a row behind it, and drops links that have
  tunnelled through more than ``TOPICAL_TUNNEL`` irrelevant pages unless their
  anchor is relevant. It counts pages and relevant pages: the harvest rate.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.httpobj import urlparse_cached

from ..content.main_text import main_text
from ..errors import SettingsError
from ..items import PageItem
from ..ordering.importance import Opic
from ..ordering.prioritizer import parse_spec
from ..ordering.topical import RelevanceModel, irrelevant_hops, link_score, topical_threshold

logger = logging.getLogger(__name__)


def topic_model(query: str, path: str, kind: str = "tfidf") -> Any:
    """The topic from a query, or from a file of example pages (paragraphs), as a TF-IDF
    profile or an embedding (``kind``); None without a topic."""
    if path:
        with open(path, encoding="utf-8") as fh:
            texts = [p for p in fh.read().split("\n\n") if p.strip()]
    elif query.strip():
        texts = [query]
    else:
        return None
    if kind == "embedding":
        from ..ordering.embedding import EmbeddingRelevance

        return EmbeddingRelevance(texts)
    return RelevanceModel.from_examples(texts) if path else RelevanceModel.from_query(query)


class OrderingMiddleware:
    """Annotates a page's links for the prioritizer (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        names = {name for name, _ in parse_spec(s.get("PRIORITIZER"))}
        spider = crawler.spider
        query = str(getattr(spider, "topic", "") or s.get("TOPIC") or "")
        self.model = topic_model(query, s.get("TOPIC_FILE"), s.get("TOPICAL_MODEL"))
        if "topical" in names and self.model is None:
            raise SettingsError("TOPIC", query, "the topical ordering needs a topic: -a topic=..., TOPIC or TOPIC_FILE")
        self.opic = "opic" in names
        self.other_host_weight = s.getint("BACKLINKS_OTHER_HOST_WEIGHT") if "backlinks" in names else 1
        if names == {"bfs"} and self.model is None:
            raise NotConfigured  # breadth-first needs nothing from the page
        self.stats = crawler.stats
        self.threshold = topical_threshold(s)
        self.inherit = s.getfloat("TOPICAL_INHERIT")
        self.tunnel = s.getint("TOPICAL_TUNNEL")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> OrderingMiddleware:
        return cls(crawler)

    async def process_spider_output(self, response: Any, result: AsyncIterator[Any], spider: Any = None):
        outputs = [item async for item in result]
        links = [o for o in outputs if isinstance(o, Request) and not o.dont_filter and not o.meta.get("revisit")
                 and not o.meta.get("requisite")]
        page = next((o for o in outputs if isinstance(o, PageItem)), None)
        dropped: set[int] = set()
        seen: set[str] = set()
        for request in links:
            if request.url in seen:
                dropped.add(id(request))  # the frontier would drop it anyway; one backlink per page
            seen.add(request.url)
        if self.model is not None:
            dropped |= self._topical(response, page, links, dropped)
        if self.other_host_weight > 1:
            host = urlparse_cached(response).hostname
            for request in links:
                if urlparse_cached(request).hostname != host:
                    request.meta["backlink_weight"] = self.other_host_weight
        if self.opic:
            # The cash goes only to the links followed: a share for a link the tunnel budget
            # dropped would leave the system, and OPIC conserves cash.
            followed = [request for request in links if id(request) not in dropped]
            share = Opic.shares(response.meta.get("opic_cash", 0.0), len(followed))
            for request in followed:
                request.meta["opic_share"] = share
        for output in outputs:
            if id(output) not in dropped:
                yield output

    def _topical(self, response: Any, page: PageItem | None, links: list[Request], dropped: set[int]) -> set[int]:
        assert self.model is not None
        text = ""
        if page is not None and page.body:
            try:
                text = f"{page.title or ''} {main_text(page.body, page.charset)}"
            except Exception:  # noqa: BLE001 - a page the extractor cannot read scores as irrelevant
                text = page.title or ""
        page_score = self.model.score(text, learn=True) if text else 0.0
        relevant = page_score >= self.threshold
        if page is not None:
            self.stats.inc_value("topical/pages")
            if relevant:
                self.stats.inc_value("topical/relevant")
            pages, hits = self.stats.get_value("topical/pages", 0), self.stats.get_value("topical/relevant", 0)
            self.stats.set_value("topical/harvest_rate", round(hits / pages, 4))
        hops = irrelevant_hops(response.meta.get("irrelevant_hops", 0), relevant)
        anchors = {target: anchor for target, anchor, _ in (page.links if page is not None else [])}
        tunnelled = set()
        for request in links:
            if id(request) in dropped:
                continue
            path_words = urlsplit(request.url).path.replace("/", " ").replace("-", " ").replace("_", " ")
            anchor_score = self.model.score(f"{anchors.get(request.url, '')} {path_words}")
            if hops > self.tunnel and anchor_score < self.threshold:
                tunnelled.add(id(request))
                self.stats.inc_value("topical/tunnel_dropped")
                continue
            # Page and anchor both off topic: an off-topic link (the last level), whatever the model's floor.
            off_topic = not relevant and anchor_score < self.threshold
            request.meta["topic_score"] = 0.0 if off_topic else link_score(page_score, anchor_score, self.inherit)
            request.meta["irrelevant_hops"] = hops
        return tunnelled
