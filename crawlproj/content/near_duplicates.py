"""Exact and near-duplicate detection (pure logic: no Scrapy, no I/O).

* Shingles are chosen per page by script: word n-grams for space-delimited
  text, character n-grams for Japanese and other CJK text (no spaces between
  words, so words cannot be counted).
* Signatures are datasketch MinHashes (``num_perm`` permutations). Shingle
  hashes are rolled with numpy from one hash per token, and the permutations
  run as one matrix operation per page: no Python call per shingle.
* :class:`NearDuplicateIndex` answers "which stored page is this a copy of":
  first by content hash (exact), then by MinHashLSH (``threshold``), and keeps
  the estimated Jaccard of the match.

The item pipeline (the Scrapy adapter) and the persistent index are still to
come (issue 5); extraction of the main text comes first there.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import zlib
from dataclasses import dataclass

import numpy as np
from datasketch import MinHash, MinHashLSH

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+", re.UNICODE)


def is_cjk(text: str, share: float = 0.3) -> bool:
    """Whether at least ``share`` of the non-space characters are CJK (kana or kanji)."""
    letters = _SPACE.sub("", text)
    return bool(letters) and len(_CJK.findall(letters)) / len(letters) >= share


def normalise(text: str) -> str:
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip()


def shingles(text: str, word_n: int = 5, char_n: int = 5) -> set[str]:
    """The page's shingles: character n-grams for CJK text, word n-grams otherwise."""
    text = normalise(text)
    if is_cjk(text):
        chars = _SPACE.sub("", text)
        if len(chars) <= char_n:
            return {chars} if chars else set()
        return {chars[i : i + char_n] for i in range(len(chars) - char_n + 1)}
    words = _WORD.findall(text)
    if len(words) <= word_n:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i : i + word_n]) for i in range(len(words) - word_n + 1)}


_PRIME = np.uint64((1 << 61) - 1)
_MAX_HASH = np.uint64((1 << 32) - 1)
_ROLL = np.uint64(1_000_003)


def shingle_hashes(text: str, word_n: int = 5, char_n: int = 5) -> np.ndarray:
    """32-bit hashes of :func:`shingles`, computed with numpy: each token (word or CJK
    character) is hashed once, and n consecutive token hashes are combined as a polynomial."""
    text = normalise(text)
    if is_cjk(text):
        tokens = np.frombuffer(_SPACE.sub("", text).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        n = char_n
    else:
        words = _WORD.findall(text)
        tokens = np.fromiter((zlib.crc32(w.encode("utf-8")) for w in words), dtype=np.uint64, count=len(words))
        n = word_n
    if len(tokens) == 0:
        return tokens
    n = min(n, len(tokens))
    count = len(tokens) - n + 1
    h = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):  # wrap-around is the point
        for j in range(n):
            h = h * _ROLL + tokens[j : j + count]
    return np.unique(h & _MAX_HASH)


class Signer:
    """MinHash signatures from shingle hashes, vectorised over shingles and permutations."""

    def __init__(self, num_perm: int = 128, seed: int = 1) -> None:
        self.num_perm = num_perm
        self.seed = seed
        # Random affine permutations h -> (a h + b) mod (2^61 - 1), kept to 32 bits: the
        # classic MinHash scheme (datasketch calls it "legacy").
        rng = np.random.RandomState(seed)
        self.a = rng.randint(1, int(_PRIME), num_perm, dtype=np.uint64)
        self.b = rng.randint(0, int(_PRIME), num_perm, dtype=np.uint64)

    def hashvalues(self, hashes: np.ndarray) -> np.ndarray:
        if len(hashes) == 0:
            return np.full(self.num_perm, _MAX_HASH, dtype=np.uint64)
        with np.errstate(over="ignore"):
            permuted = (np.outer(hashes, self.a) + self.b) % _PRIME & _MAX_HASH
        return permuted.min(axis=0)

    def minhash(self, hashes: np.ndarray) -> MinHash:
        return MinHash(num_perm=self.num_perm, seed=self.seed, hashvalues=self.hashvalues(hashes), scheme="legacy")


def signature(text: str, num_perm: int = 128) -> MinHash:
    return Signer(num_perm).minhash(shingle_hashes(text))


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def content_hash(text: str) -> str:
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Match:
    canonical: str  # the key (URL) of the page this one duplicates
    kind: str  # "exact" | "near"
    jaccard: float  # estimated from the signatures (1.0 for exact)


class NearDuplicateIndex:
    """Content hashes plus a MinHashLSH over signatures; in memory."""

    def __init__(self, threshold: float = 0.8, num_perm: int = 128) -> None:
        self.threshold = threshold
        self.num_perm = num_perm
        self.lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        self.signer = Signer(num_perm)
        self.hashes: dict[str, str] = {}  # content hash -> key
        self.signatures: dict[str, np.ndarray] = {}  # key -> hash values

    def check_and_add(self, key: str, text: str) -> Match | None:
        """The stored page ``text`` duplicates, or None (and then it is stored as canonical)."""
        digest = content_hash(text)
        if digest in self.hashes:
            return Match(self.hashes[digest], "exact", 1.0)
        sig = self.signer.minhash(shingle_hashes(text))
        best: Match | None = None
        for other in self.lsh.query(sig):
            estimate = float(np.mean(self.signatures[other] == sig.hashvalues))
            if estimate >= self.threshold and (best is None or estimate > best.jaccard):
                best = Match(other, "near", estimate)
        if best is not None:
            return best
        self.hashes[digest] = key
        self.signatures[key] = sig.hashvalues.copy()
        self.lsh.insert(key, sig)
        return None
