"""Online importance of URLs waiting in the frontier (pure: no Scrapy, no Twisted, no I/O).

Each component keeps state only for URLs still waiting (a URL's entry goes when
it is dequeued), costs O(1) per link, and says how important a waiting URL is:

* :class:`Opic`: On-line Page Importance Computation (Abiteboul, Preda, Cobena
  2003; Nutch's OPIC scoring). Cash flows along links: a seed starts with 1; a
  fetched page hands all the cash it gathered, split evenly, to its out-links.
  A waiting URL's importance is the cash it has gathered so far.
* :class:`Backlinks`: the number of fetched pages linking the URL, a page of another host
  counting ``meta["backlink_weight"]`` (``BACKLINKS_OTHER_HOST_WEIGHT``, set by the ordering
  middleware on links that leave their page's host).
* :class:`LargerSites`: "larger sites first" (Baeza-Yates et al., Crawling a
  country, 2005): the number of URLs waiting on the URL's site.
* :class:`Depth`, :class:`StaticScores`, :class:`TopicScore`: stateless scores
  read from the request (hops, a score file such as a previous crawl's PageRank, a focused crawl's
  relevance).

The interface: ``admit(key, host, meta, new)`` when a link to the URL is found
(``new``: first time), ``take(key, host, meta)`` when it is dequeued (a component
may leave what the page needs in ``meta``: OPIC its cash), ``give_back(key, host, meta)``
when a dequeued URL comes back unfetched (robots.txt first, a retry), ``score(key, url,
host, meta)``, and ``state()``/``restore()`` to persist with the frontier.
``key`` is the URL's 64-bit fingerprint (cheaper to keep than the URL).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from .topical import DEFAULT_THRESHOLDS


class Component:
    """A score with no state (the base of every component)."""

    name = ""
    dynamic = False  # True: a waiting URL's score can rise (the frontier promotes it lazily)
    #: The score of an average URL, when the scale is known in advance; None: learnt as the
    #: crawl goes (a running geometric mean of the scores of new URLs).
    reference: float | None = None

    def admit(self, key: int, host: str, meta: dict, new: bool) -> None:
        pass

    def take(self, key: int, host: str, meta: dict) -> None:
        pass

    def give_back(self, key: int, host: str, meta: dict) -> None:
        """Undo :meth:`take` for a URL handed out and sent back unfetched (its robots.txt came
        first, a retry, a render): it waits again, and keeps gathering importance."""

    def score(self, key: int, url: str, host: str, meta: dict) -> float:
        raise NotImplementedError

    def state(self) -> object:
        return None

    def restore(self, state: object) -> None:
        pass

    def __len__(self) -> int:
        return 0


class Tracked(Component):
    """A component keeping one table (URL fingerprint or site -> number) of waiting URLs.

    Components change the table only through :meth:`add`, :meth:`pop` and :meth:`value`,
    so the distributed scheduler can keep it in Redis instead
    (:mod:`crawlproj.distributed.ordering`).
    """

    dynamic = True

    def __init__(self) -> None:
        self.table: dict = {}

    def add(self, field: object, amount: float, create: bool) -> None:
        """Add ``amount`` to ``field``, creating it if ``create`` (else only while it exists);
        a decrement that brings it to 0 or below removes it."""
        if not create and field not in self.table:
            return
        value = self.table.get(field, 0) + amount
        if amount < 0 and value <= 0:
            self.table.pop(field, None)
        else:
            self.table[field] = value

    def pop(self, field: object, default: float) -> float:
        return self.table.pop(field, default)

    def value(self, field: object, default: float) -> float:
        return self.table.get(field, default)

    def state(self) -> object:
        return self.table

    def restore(self, state: object) -> None:
        self.table = dict(state or {})  # type: ignore[call-overload]

    def __len__(self) -> int:
        return len(self.table)


class Opic(Tracked):
    """OPIC cash of the waiting URLs. Seeds get ``seed_cash``; links carry ``meta["opic_share"]``."""

    name = "opic"

    def __init__(self, seed_cash: float = 1.0) -> None:
        super().__init__()
        self.seed_cash = seed_cash

    @property
    def cash(self) -> dict[int, float]:
        return self.table

    def admit(self, key: int, host: str, meta: dict, new: bool) -> None:
        share = meta.get("opic_share")
        if new:
            self.add(key, self.seed_cash if share is None else share, create=True)
        elif share:  # only URLs still waiting gather cash
            self.add(key, share, create=False)

    def take(self, key: int, host: str, meta: dict) -> None:
        # A retried request already carries its cash: add, never replace.
        meta["opic_cash"] = meta.get("opic_cash", 0.0) + self.pop(key, 0.0)

    def give_back(self, key: int, host: str, meta: dict) -> None:
        cash = meta.pop("opic_cash", 0.0)
        if cash:
            self.add(key, cash, create=True)

    def score(self, key: int, url: str, host: str, meta: dict) -> float:
        return self.value(key, meta.get("opic_cash", 0.0))

    @staticmethod
    def shares(cash: float, links: int) -> float:
        """What each of a fetched page's ``links`` out-links receives."""
        return cash / links if links else 0.0


class Backlinks(Tracked):
    """In-links of the waiting URLs from fetched pages (a page counts once: the middleware
    sends each target once per page; a page of another host counts ``meta["backlink_weight"]``,
    an integer, 1 when absent)."""

    name = "backlinks"

    @property
    def inlinks(self) -> dict[int, int]:
        return self.table

    def admit(self, key: int, host: str, meta: dict, new: bool) -> None:
        linked = int(meta.get("backlink_weight", 1)) if meta.get("depth", 0) > 0 else 0  # a seed has no in-link
        if new or linked:
            self.add(key, linked, create=new)

    def take(self, key: int, host: str, meta: dict) -> None:
        meta["backlinks"] = self.pop(key, meta.get("backlinks", 0))

    def give_back(self, key: int, host: str, meta: dict) -> None:
        self.add(key, meta.pop("backlinks", 0), create=True)

    def score(self, key: int, url: str, host: str, meta: dict) -> float:
        return 1.0 + self.value(key, meta.get("backlinks", 0))


class LargerSites(Tracked):
    """URLs waiting per site: the sites with the most pages to go come first."""

    name = "larger_sites"

    @property
    def waiting(self) -> dict[str, int]:
        return self.table

    def admit(self, key: int, host: str, meta: dict, new: bool) -> None:
        if new:
            self.add(host, 1, create=True)

    def take(self, key: int, host: str, meta: dict) -> None:
        self.add(host, -1, create=False)

    def give_back(self, key: int, host: str, meta: dict) -> None:
        self.add(host, 1, create=True)

    def score(self, key: int, url: str, host: str, meta: dict) -> float:
        return 1.0 + self.value(host, 0)


class Depth(Component):
    """Breadth-first as a score: halves with each hop from the seed."""

    name = "depth"
    reference = 1.0  # a seed

    def score(self, key: int, url: str, host: str, meta: dict) -> float:
        return 2.0 ** -max(0, int(meta.get("depth", 0)))


class TopicScore(Component):
    """A focused crawl's relevance of the link (``meta["topic_score"]``, set by the ordering
    middleware from the page's and the anchor's relevance); a seed counts as relevant."""

    name = "topical"
    reference = DEFAULT_THRESHOLDS["tfidf"]  # the relevance threshold (build_prioritizer sets the model's)

    def score(self, key: int, url: str, host: str, meta: dict) -> float:
        return float(meta.get("topic_score", 1.0))


class StaticScores(Component):
    """Scores known in advance, from a file: a previous crawl's PageRank, or (in the benchmark)
    the sandbox's true PageRank, which makes this the oracle. URLs not listed score 0."""

    name = "scores"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        positive = [v for v in scores.values() if v > 0]
        # The geometric mean: PageRank-like scores span orders of magnitude.
        self.reference = math.exp(sum(map(math.log, positive)) / len(positive)) if positive else 1.0

    @classmethod
    def from_file(cls, path: str) -> StaticScores:
        """A JSON object ``{url: score}``, or lines ``url<TAB>score``."""
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        if text.lstrip().startswith("{"):
            return cls({u: float(v) for u, v in json.loads(text).items()})
        return cls(dict(_tab_lines(text.splitlines())))

    def score(self, key: int, url: str, host: str, meta: dict) -> float:
        return self.scores.get(url, 0.0)


def _tab_lines(lines: Iterable[str]) -> Iterable[tuple[str, float]]:
    for line in lines:
        url, _, value = line.strip().partition("\t")
        if url and not url.startswith("#"):
            yield url, float(value or 0)
