"""The shingle measure of the Scrapinghub article-extraction-benchmark, reimplemented (pure).

Comparing an extractor's text with a page's true text as bags of word 4-grams rewards the
right words in the right order, forgives differences of whitespace, punctuation and block
separators, and counts a paragraph kept twice as extra text. It is the measure the
published figures for crawlproj's extractor and its peers were taken with, so figures
from ``bench/content.py`` can be set beside them:

* tokens are ``\\w+`` runs (Unicode); shingles are the 4-grams of the tokens, counted with
  their multiplicity (a text of 1-3 tokens is one shingle of all of them, an empty one none);
* per page, tp is the shingles both texts have (the smaller count), fp the extracted text's
  extra ones, fn the true text's missing ones, the three divided by their sum so that long
  pages weigh no more than short ones;
* a corpus's precision is the mean of its pages' tp/(tp+fp), over the pages where that is
  defined (tp+fp > 0), its recall the mean of tp/(tp+fn) over the pages with tp+fn > 0, and
  its F1 is 2PR/(P+R) of those two means (not the mean of the pages' F1).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

_TOKEN = re.compile(r"\w+")
N = 4


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text or "")


def shingle_counts(text: str, n: int = N) -> Counter:
    """The text's n-grams of tokens with their counts (one shingle of all tokens when fewer than n)."""
    words = tokens(text)
    if not words:
        return Counter()
    if len(words) < n:
        return Counter([tuple(words)])
    return Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))


@dataclass(frozen=True)
class Match:
    """One page's tp, fp and fn, normalised by their sum (all 0 when both texts are empty)."""

    tp: float
    fp: float
    fn: float

    def _share(self, missed: float) -> float:
        """tp / (tp + missed): 1 when the texts match exactly, 0 when nothing is shared or missed."""
        if self.fp == self.fn == 0:
            return 1.0
        if self.tp == missed == 0:
            return 0.0
        return self.tp / (self.tp + missed)

    @property
    def precision(self) -> float:
        return self._share(self.fp)

    @property
    def recall(self) -> float:
        return self._share(self.fn)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def match(truth: str, predicted: str) -> Match:
    """How ``predicted``'s shingles match ``truth``'s."""
    want, got = shingle_counts(truth), shingle_counts(predicted)
    tp = sum((want & got).values())
    fp = sum((got - want).values())
    fn = sum((want - got).values())
    total = tp + fp + fn
    return Match(tp / total, fp / total, fn / total) if total else Match(0.0, 0.0, 0.0)


def corpus_scores(matches: Iterable[Match]) -> dict[str, float]:
    """F1, precision and recall of a corpus: the means of its pages' precision and recall."""
    matches = list(matches)
    precisions = [m.precision for m in matches if m.tp + m.fp > 0]
    recalls = [m.recall for m in matches if m.tp + m.fn > 0]
    p = sum(precisions) / len(precisions) if precisions else 0.0
    r = sum(recalls) / len(recalls) if recalls else 0.0
    return {"f1": 2 * p * r / (p + r) if p + r else 0.0, "precision": p, "recall": r}


@dataclass(frozen=True)
class Bag:
    """A text's shingles and its set of tokens, computed once to test many elements against."""

    shingles: Counter
    words: frozenset


def bag(text: str) -> Bag:
    return Bag(shingle_counts(text), frozenset(tokens(text)))


def kept(element_text: str, extracted: Bag, share: float = 0.9) -> bool:
    """Whether an element (a code block, a table, a definition list) survives in the extracted
    text: at least ``share`` of its own shingles are there (with their counts), or, under 4
    tokens, every one of its tokens. An element with no token is kept."""
    words = tokens(element_text)
    if len(words) < N:
        return all(w in extracted.words for w in words)
    own = shingle_counts(element_text)
    return sum((own & extracted.shingles).values()) >= share * sum(own.values())
