"""Topical relevance by sentence embeddings, offline: WordLlama.

The ``wordllama`` wheel on PyPI ships its model (256-dimensional token embeddings
and the tokenizer). It is loaded from the package's own directory with downloads
disabled, so it never touches the network: a missing file is an error, not a
download. A text's embedding is the model's pooled token embeddings; relevance is
the cosine with the topic's (the mean of the query's or the example pages'),
clipped at 0. Unlike TF-IDF it credits words the topic never used ("nebula" for
"astronomy telescope").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

MAX_CHARS = 20_000  # a page's first 20 k characters say what it is about


def _load():  # noqa: ANN202 - wordllama.WordLlamaInference
    import wordllama
    from wordllama import WordLlama

    # The tokenizer sits in <package>/tokenizers, where load() looks in its cache directory.
    return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


class EmbeddingRelevance:
    """Cosine of a text's embedding with the topic's; :meth:`score` is in [0, 1]."""

    def __init__(self, topic_texts: list[str]) -> None:
        texts = [t for t in topic_texts if t.strip()]
        if not texts:
            raise ValueError("a topic needs at least one word")
        self.model = _load()
        self.topic = self._unit(np.mean(self._embed(texts), axis=0))

    def _embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.model.embed([t[:MAX_CHARS] for t in texts]), dtype=np.float32)

    @staticmethod
    def _unit(v: np.ndarray) -> np.ndarray:
        norm = float(np.linalg.norm(v))
        return v / norm if norm else v

    def score(self, text: str, learn: bool = False) -> float:
        if not text.strip():
            return 0.0
        return max(0.0, float(self._unit(self._embed([text])[0]) @ self.topic))
