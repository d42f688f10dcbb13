"""Exact and near-duplicate detection (pure logic: no Scrapy, no I/O).

* Shingles are chosen per page by script: word n-grams for space-delimited
  text, character n-grams for Japanese and other CJK text (no spaces between
  words, so words cannot be counted).
* Signatures are datasketch MinHashes (``num_perm`` permutations). Shingle
  hashes are rolled with numpy from one hash per token, and the permutations
  run as one matrix operation per page: no Python call per shingle.
* :class:`NearDuplicateIndex` answers "which stored page is this a copy of":
  first by content hash (exact), then by MinHashLSH (``threshold``), and keeps
  the estimated Jaccard of the match. Its entries persist through a small
  storage interface (:mod:`crawlproj.content.index_storage`).

Texts are main texts (:mod:`crawlproj.content.main_text`); the Scrapy adapter
is :mod:`crawlproj.content.near_duplicates_pipeline`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import defaults
from .minhash_lsh import LeanMinHash, MinHash, minhash_lsh

if TYPE_CHECKING:
    from .index_storage import IndexStorage

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")
_WORD = re.compile(r"\w+", re.UNICODE)


#: Characters looked at to decide a page's script: enough to judge, and no cost on long pages.
_SCRIPT_SAMPLE = 1000


def is_cjk(text: str, share: float = 0.3) -> bool:
    """Whether at least ``share`` of the non-space characters are CJK (kana or kanji)."""
    letters = "".join(text[:_SCRIPT_SAMPLE].split())
    return bool(letters) and len(_CJK.findall(letters)) / len(letters) >= share


def normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def _tokens(text: str) -> tuple[list[str], bool]:
    """(tokens, cjk) of normalised text: its characters for CJK text, its words otherwise."""
    if is_cjk(text):
        return list(text.replace(" ", "")), True
    return _WORD.findall(text), False


def shingles(text: str, word_n: int = 5, char_n: int = 5) -> set[str]:
    """The page's shingles: character n-grams for CJK text, word n-grams otherwise."""
    tokens, cjk = _tokens(normalise(text))
    n, sep = (char_n, "") if cjk else (word_n, " ")
    if len(tokens) <= n:
        return {sep.join(tokens)} if tokens else set()
    return {sep.join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


_SHIFT = np.uint64(32)
_BLOCK = 256
_MAX_HASH = np.uint64((1 << 32) - 1)
_ROLL = np.uint64(1_000_003)
_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd: multiply-shift takes the well-mixed top 32 bits
_BASE = 0x100000001B3  # odd, so invertible modulo 2^64
_powers = np.ones(1, dtype=np.uint64)
_inverse_powers = np.ones(1, dtype=np.uint64)


def _power_tables(n: int) -> tuple[np.ndarray, np.ndarray]:
    """BASE^i and BASE^-i modulo 2^64 for i < n (grown on demand, kept between calls)."""
    global _powers, _inverse_powers
    if len(_powers) < n:
        size = max(n, 2 * len(_powers))
        one = np.ones(1, dtype=np.uint64)
        _powers = np.concatenate((one, np.cumprod(np.full(size - 1, _BASE, dtype=np.uint64))))
        inverse = np.full(size - 1, pow(_BASE, -1, 1 << 64), dtype=np.uint64)
        _inverse_powers = np.concatenate((one, np.cumprod(inverse)))
    return _powers[:n], _inverse_powers[:n]


# Bytes that are not word characters (\w) in ASCII text become spaces: splitting then finds
# exactly the words _WORD finds, about 4x faster than the regex.
_ASCII_NON_WORD = bytes(c if chr(c).isalnum() or c == 0x5F else 0x20 for c in range(128)) + b" " * 128


def words(text: str) -> list[str] | list[bytes]:
    """The words of normalised text (as ASCII bytes when the text is ASCII: same code points)."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_NON_WORD).split()
    return _WORD.findall(text)


def _word_hashes(words: list[str] | list[bytes]) -> np.ndarray:
    """One 32-bit hash a word, for all words at once: a polynomial over the word's code points,
    read off prefix sums of the whole text (no Python call per word)."""
    if isinstance(words[0], bytes):
        points = np.frombuffer(b"\0".join(words), dtype=np.uint8).astype(np.uint64)
    else:
        points = np.frombuffer("\0".join(words).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    powers, inverse = _power_tables(len(points))
    prefix = np.zeros(len(points) + 1, dtype=np.uint64)
    np.cumsum(points * powers, out=prefix[1:])
    breaks = np.flatnonzero(points == 0)
    starts = np.concatenate((np.zeros(1, dtype=np.intp), breaks + 1))
    ends = np.concatenate((breaks, np.full(1, len(points), dtype=np.intp)))
    return ((prefix[ends] - prefix[starts]) * inverse[starts] * _MIX) >> _SHIFT


def shingle_hashes(text: str, word_n: int = 5, char_n: int = 5) -> np.ndarray:
    """32-bit hashes of the n-grams of :func:`shingles` (repeats included), computed with numpy:
    each token (word or CJK character) is hashed once, and n consecutive token hashes are
    combined as a polynomial."""
    return _normalised_shingle_hashes(normalise(text), word_n, char_n)


def _normalised_shingle_hashes(text: str, word_n: int, char_n: int) -> np.ndarray:
    if is_cjk(text):
        tokens = np.frombuffer(text.replace(" ", "").encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        n = char_n
    else:
        found = words(text)
        tokens = _word_hashes(found) if found else np.zeros(0, dtype=np.uint64)
        n = word_n
    if len(tokens) == 0:
        return tokens
    n = min(n, len(tokens))
    count = len(tokens) - n + 1
    h = np.zeros(count, dtype=np.uint64)
    for j in range(n):  # unsigned integer arithmetic wraps modulo 2^64: that is the point
        h *= _ROLL
        h += tokens[j : j + count]
    h *= _MIX
    h >>= _SHIFT
    return h


class Signer:
    """MinHash signatures from shingle hashes, vectorised over shingles and permutations.

    Permutation i maps a 32-bit shingle hash h to ((a_i h + b_i) mod 2^64) >> 32
    (multiply-add-shift, a universal family for 32-bit keys), which needs no
    division: one multiply, add and shift per shingle and permutation, done in
    place on one matrix.
    """

    def __init__(self, num_perm: int = 128, seed: int = 1) -> None:
        self.num_perm = num_perm
        self.seed = seed
        rng = np.random.RandomState(seed)
        self.a = rng.randint(0, 1 << 62, num_perm, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        self.b = rng.randint(0, 1 << 62, num_perm, dtype=np.uint64) * np.uint64(4)

    def hashvalues(self, hashes: np.ndarray) -> np.ndarray:
        if len(hashes) == 0:
            return np.full(self.num_perm, _MAX_HASH, dtype=np.uint64)
        out = np.full(self.num_perm, _MAX_HASH, dtype=np.uint64)
        # Blocks of shingles keep the matrix small enough for the CPU cache (a page's whole
        # matrix is megabytes, and evicting the crawler's working set costs more than the math).
        block = np.empty((min(len(hashes), _BLOCK), self.num_perm), dtype=np.uint64)
        for start in range(0, len(hashes), _BLOCK):
            chunk = hashes[start : start + _BLOCK]
            view = block[: len(chunk)]
            np.multiply.outer(chunk, self.a, out=view)  # wraps modulo 2^64: the point
            view += self.b
            view >>= _SHIFT
            np.minimum(out, view.min(axis=0), out=out)
        return out

    def lean(self, values: np.ndarray) -> LeanMinHash:
        """A datasketch sketch of ready hash values (LeanMinHash: no permutation tables built)."""
        return LeanMinHash(seed=self.seed, hashvalues=values, scheme="legacy")

    def minhash(self, hashes: np.ndarray) -> MinHash:
        return MinHash(num_perm=self.num_perm, seed=self.seed, hashvalues=self.hashvalues(hashes), scheme="legacy")


def signature(text: str, num_perm: int = 128) -> MinHash:
    return Signer(num_perm).minhash(shingle_hashes(text))


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def content_hash(text: str) -> str:
    return _digest(normalise(text))


def _digest(normalised: str) -> str:
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


EMPTY_DIGEST = _digest("")


#: Marks a shingle-set digest among content hashes (the index's one digest -> key table).
SET_DIGEST = "set:"


@dataclass(frozen=True)
class Fingerprint:
    """What the index needs of a text: its content hash and MinHash values (None: too short).

    A text too short to sign has ``set_digest`` instead, the digest of its shingle set: two
    short pages with one shingle set (a Jaccard of 1.0: the same words in the same order,
    whatever their punctuation, case or markup) are near-duplicates for certain, where a
    signature of a few shingles could only guess."""

    digest: str
    values: np.ndarray | None
    length: int = 0  # characters of the text
    set_digest: str | None = None

    @property
    def empty(self) -> bool:
        """No text at all (a script's shell before rendering, say): a copy of nothing."""
        return self.digest == EMPTY_DIGEST


def fingerprint(text: str, signer: Signer, min_shingles: int = 1, word_n: int = 5, char_n: int = 5,
                max_chars: int = 0) -> Fingerprint:
    """The pure, stateless half of a check (the text is normalised once for both hashes).

    The content hash covers the whole text; the signature its first ``max_chars`` characters
    (0: all). Tens of thousands of shingles estimate a Jaccard as well as millions, and a page
    of megabytes of text would otherwise cost seconds and hundreds of MB to sign."""
    normalised = normalise(text)
    hashes = _normalised_shingle_hashes(normalised[:max_chars] if max_chars else normalised, word_n, char_n)
    if len(hashes) >= min_shingles:
        return Fingerprint(_digest(normalised), signer.hashvalues(hashes), len(text))
    shingle_set = np.unique(hashes).astype("<u8").tobytes() if len(hashes) else b""
    return Fingerprint(_digest(normalised), None, len(text),
                       SET_DIGEST + hashlib.sha256(shingle_set).hexdigest() if shingle_set else None)


def fingerprinter(index: Any) -> Callable[[str], Fingerprint]:
    """An index's :func:`fingerprint` of a text, as a function that pickles: its signer and
    shingle sizes, not its storage or connections (a helper process may run it)."""
    return partial(fingerprint, signer=index.signer, min_shingles=index.min_shingles, word_n=index.word_n,
                   char_n=index.char_n, max_chars=index.max_chars)


class SigningShape:
    """How an index signs a page's main text: the threshold it matches at, its MinHash
    permutations and shingle sizes. Both indexes (memory and Redis) sign alike, through
    this, so one crawl's signatures compare with another's."""

    def __init__(self, threshold: float = defaults.NEAR_DUPLICATES_THRESHOLD,
                 num_perm: int = defaults.NEAR_DUPLICATES_NUM_PERM, min_shingles: int = 1, word_n: int = 5,
                 char_n: int = 5, max_chars: int = 0) -> None:
        self.threshold, self.num_perm, self.min_shingles = threshold, num_perm, min_shingles
        self.word_n, self.char_n, self.max_chars = word_n, char_n, max_chars
        self.signer = Signer(num_perm)
        #: :meth:`fingerprint` as a function that pickles (a helper process may run it).
        self.fingerprint_of = fingerprinter(self)

    def fingerprint(self, text: str) -> Fingerprint:
        return self.fingerprint_of(text)

    def check_and_add(self, key: str, text: str) -> Match | None:
        """The canonical page ``text`` duplicates, or None (and then ``key`` is indexed as canonical)."""
        return self.add(key, self.fingerprint(text))

    def add(self, key: str, print_: Fingerprint) -> Match | None:
        raise NotImplementedError

    def best_match(self, values: np.ndarray, candidates: Iterable[tuple[str, bytes | None]], key: str) -> Match | None:
        """The most similar of ``candidates`` (key, stored 32-bit signature) at the threshold or
        above, leaving ``key`` itself out (a page fetched again never copies itself)."""
        best: Match | None = None
        for other, stored in candidates:
            if other == key or stored is None:
                continue
            estimate = float(np.mean(np.frombuffer(stored, dtype="<u4") == values))
            if estimate >= self.threshold and (best is None or estimate > best.jaccard):
                best = Match(other, "near", estimate)
        return best


@dataclass(frozen=True)
class Match:
    canonical: str  # the key (URL) of the stored page this one duplicates
    kind: str  # "exact" | "near"
    jaccard: float  # estimated from the signatures (1.0 for exact)


class NearDuplicateIndex(SigningShape):
    """Which stored page a page's main text duplicates: exact (content hash) first, then near (LSH).

    Only canonical pages enter the index, so a near-duplicate points to the
    canonical page it is most similar to, with the estimated Jaccard of that
    pair, and the index grows with distinct content only. Pages too short to
    sign (fewer than ``min_shingles`` shingles) are matched exactly only: an
    identical text is a copy whatever its length.

    The index lives in memory and is loaded from, and written through to,
    ``storage`` (an :class:`~crawlproj.content.index_storage.IndexStorage`),
    so it survives restarts. Checking a key that is already canonical (a page
    fetched again) never matches itself; its entry is replaced.
    """

    def __init__(self, threshold: float = defaults.NEAR_DUPLICATES_THRESHOLD,
                 num_perm: int = defaults.NEAR_DUPLICATES_NUM_PERM, storage: IndexStorage | None = None,
                 min_shingles: int = 1, word_n: int = 5, char_n: int = 5, max_chars: int = 0) -> None:
        from .index_storage import MemoryIndexStorage

        super().__init__(threshold, num_perm, min_shingles, word_n, char_n, max_chars)
        self.lsh = minhash_lsh(threshold, num_perm)
        self.storage = storage if storage is not None else MemoryIndexStorage()
        self.hashes: dict[str, str] = {}  # content hash -> key
        self.signatures: dict[str, np.ndarray] = {}  # key -> hash values
        self.digests: dict[str, str] = {}  # key -> content hash
        for key, digest, values in self.storage.entries():
            if len(values) != num_perm:
                raise ValueError(f"the stored index has {len(values)} permutations, not {num_perm}")
            self._insert(key, digest, values)

    def __len__(self) -> int:
        return len(self.signatures)

    def _insert(self, key: str, digest: str, values: np.ndarray) -> None:
        if key in self.signatures:
            self._remove(key)
        self.hashes.setdefault(digest, key)
        self.digests[key] = digest
        self.signatures[key] = values
        self.lsh.insert(key, self.signer.lean(values), check_duplication=False)

    def _remove(self, key: str) -> None:
        self.lsh.remove(key)
        digest = self.digests.pop(key)
        if self.hashes.get(digest) == key:
            del self.hashes[digest]
        del self.signatures[key]

    def add(self, key: str, print_: Fingerprint) -> Match | None:
        """:meth:`check_and_add` for a fingerprint already computed (the pipeline keeps its length)."""
        if print_.empty:
            return None
        owner = self.hashes.get(print_.digest)
        if owner is not None and owner != key:
            return Match(owner, "exact", 1.0)
        values = print_.values
        if values is None:  # too short to sign: its copies are found by its digest and its shingle set
            if print_.set_digest is not None:
                owner = self.hashes.get(print_.set_digest)
                if owner is not None and owner != key:
                    return Match(owner, "near", 1.0)
                self.hashes.setdefault(print_.set_digest, key)
            self.hashes.setdefault(print_.digest, key)
            return None
        best: Match | None = None
        for other in self.lsh.query(self.signer.lean(values)):
            if other == key:
                continue
            estimate = float(np.mean(self.signatures[other] == values))
            if estimate >= self.threshold and (best is None or estimate > best.jaccard):
                best = Match(other, "near", estimate)
        if best is not None:
            return best
        self._insert(key, print_.digest, values)
        self.storage.put(key, print_.digest, values)
        return None
