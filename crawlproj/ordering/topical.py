"""Topical (focused) crawling: how relevant a text is to a topic (pure: no Scrapy, no I/O).

:class:`RelevanceModel` is a TF-IDF profile of the topic, built from a query
(``-a topic="astronomy telescope"``) or from example pages, and scores a text by
the cosine of its TF-IDF vector with the profile. Document frequencies are
learnt online from the pages the crawl scores, so common words lose weight as
the crawl goes. English words and, for Japanese (no spaces), character bigrams
are the terms.

A link's score mixes its page's score with its anchor text's (the crawler-anatomy notes: the
anchor often says more about the target than the page around it); :func:`link_score`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator

_TERM = re.compile(r"[a-z][a-z0-9]+|[\u3040-\u30ff\u3400-\u9fff]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
STOP_WORDS = frozenset(
    "the and for are but not you all any can had her was one our out has have him his how its may new now "
    "old see two way who did get let put say she too use that this with from they will would there their "
    "what about which when make like time just know take into year your some could them than then these "
    "other only also after first well even want because any most page html http https www com "
    "of to in on at by is it as or an be we he me my no so up do if us".split())


def terms(text: str) -> Iterator[str]:
    """Lower-cased words of two or more letters (stop words out) and CJK character bigrams."""
    for m in _TERM.finditer(text.lower()):
        word = m.group()
        if _CJK.match(word):
            if len(word) == 1:
                yield word
            else:
                yield from (word[i:i + 2] for i in range(len(word) - 1))
        elif word not in STOP_WORDS:
            yield word


class RelevanceModel:
    """A TF-IDF topic profile; :meth:`score` is in [0, 1]."""

    def __init__(self, profile: Counter[str]) -> None:
        if not profile:
            raise ValueError("a topic needs at least one word")
        self.profile = profile
        self.docs = 0
        self.df: Counter[str] = Counter()

    @classmethod
    def from_query(cls, query: str) -> RelevanceModel:
        return cls(Counter(terms(query)))

    @classmethod
    def from_examples(cls, texts: Iterable[str]) -> RelevanceModel:
        """A profile from example pages: their terms, each page's counted once per term
        (a word every example uses matters more than one example repeating itself)."""
        profile: Counter[str] = Counter()
        for text in texts:
            profile.update(set(terms(text)))
        return cls(profile)

    def idf(self, term: str) -> float:
        return math.log((self.docs + 1) / (self.df.get(term, 0) + 1)) + 1.0

    def score(self, text: str, learn: bool = False) -> float:
        """Cosine of ``text`` with the profile; ``learn``: count the text in the document frequencies."""
        tf = Counter(terms(text))
        if learn and tf:
            self.docs += 1
            self.df.update(tf.keys())
        if not tf:
            return 0.0
        idf = {t: self.idf(t) for t in tf.keys() | self.profile.keys()}
        dot = sum(n * idf[t] * self.profile[t] * idf[t] for t, n in tf.items() if t in self.profile)
        if not dot:
            return 0.0
        norm_text = math.sqrt(sum((n * idf[t]) ** 2 for t, n in tf.items()))
        norm_profile = math.sqrt(sum((w * idf[t]) ** 2 for t, w in self.profile.items()))
        return dot / (norm_text * norm_profile)


def link_score(page_score: float, anchor_score: float, inherit: float) -> float:
    """A link's relevance: ``inherit`` of its page's, the rest its anchor text's."""
    return inherit * page_score + (1.0 - inherit) * anchor_score


def irrelevant_hops(parent_hops: int, page_relevant: bool) -> int:
    """Irrelevant pages in a row on the path to a link: 0 from a relevant page."""
    return 0 if page_relevant else parent_hops + 1


#: The relevance threshold of each model when ``TOPICAL_THRESHOLD`` is 0: TF-IDF cosines of
#: on-topic pages start low; embedding cosines of unrelated text already reach about 0.1.
DEFAULT_THRESHOLDS = {"tfidf": 0.1, "embedding": 0.3}


def topical_threshold(settings) -> float:  # noqa: ANN001 - Scrapy Settings
    """``TOPICAL_THRESHOLD``, or the ``TOPICAL_MODEL``'s own when it is 0."""
    return settings.getfloat("TOPICAL_THRESHOLD") or DEFAULT_THRESHOLDS[settings.get("TOPICAL_MODEL")]
