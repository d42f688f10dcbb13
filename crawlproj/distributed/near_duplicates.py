"""The near-duplicate index shared by every worker, in Redis.

Same contract as :class:`~crawlproj.content.near_duplicates.NearDuplicateIndex` (exact by
content hash first, then MinHash LSH; only canonical pages enter), with the state in
Redis so a page one worker stores is matched against pages any worker stored:

* ``P:nd:digest:<shard>``  hashes content hash -> canonical key (set once: HSETNX); a short
                           page's shingle-set digest too (``set:<hex>``)
* ``P:nd:sig:<shard>``     hashes key -> signature bytes (and ``P:nd:keydigest:<shard>`` key -> its digest)
* ``P:nd:b<i>:<band hash>`` sets of keys: the LSH bands (datasketch's b x r for the threshold)
* ``P:nd:count``           canonical pages signed

The tables are split into :data:`~.keyspace.HASH_SHARDS` hashes (by digest, by key), so no
key grows beyond its share of the crawl and a cluster spreads them over its masters; no
command spans two keys. A check is two round trips whatever the size of the index: the
digest, the band sets and the page's own signature (one pipeline), the candidates' signatures
(one pipeline, when there are any); an insert one more. Memory: a
canonical page costs its signature (4 bytes x permutations), its digest twice and one
member in each of b sets, about 900 bytes at 128 permutations.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .. import defaults
from ..content.minhash_lsh import minhash_lsh
from ..content.near_duplicates import Fingerprint, Match, SigningShape
from .connection import execute_pipeline, is_cluster
from .keyspace import sharded


class _NoStorage:
    """Redis writes at once; the pipeline's commit and close hooks have nothing to do."""

    def commit(self) -> None:
        pass

    def close(self) -> None:
        pass


class RedisNearDuplicateIndex(SigningShape):
    """A :class:`NearDuplicateIndex` whose state lives in Redis (see the module docstring)."""

    @classmethod
    def from_settings(cls, settings, **shape) -> RedisNearDuplicateIndex:  # noqa: ANN001 - Scrapy Settings
        from . import connection

        index = cls(connection.from_settings(settings), settings.get("REDIS_PREFIX"), **shape)
        index.where = f"{settings.get('REDIS_URL')} ({settings.get('REDIS_PREFIX')}:nd:*)"
        return index

    def __init__(self, client, prefix: str, threshold: float = defaults.NEAR_DUPLICATES_THRESHOLD,
                 num_perm: int = defaults.NEAR_DUPLICATES_NUM_PERM, min_shingles: int = 1,
                 word_n: int = 5, char_n: int = 5, max_chars: int = 0) -> None:
        super().__init__(threshold, num_perm, min_shingles, word_n, char_n, max_chars)
        self.r, self.prefix = client, f"{prefix}:nd"
        self.ranges = minhash_lsh(threshold, num_perm).hashranges  # datasketch's b x r
        self.storage = _NoStorage()

    def __len__(self) -> int:
        return int(self.r.get(f"{self.prefix}:count") or 0)

    def _digest(self, digest: str) -> str:
        return sharded(f"{self.prefix}:digest", digest)

    def _bands(self, values: np.ndarray) -> list[str]:
        return [f"{self.prefix}:b{i}:{hashlib.blake2b(values[a:b].tobytes(), digest_size=8).hexdigest()}"
                for i, (a, b) in enumerate(self.ranges)]

    def add(self, key: str, print_: Fingerprint) -> Match | None:
        """The canonical page this one duplicates, or None (then ``key`` becomes canonical)."""
        if print_.empty:
            return None
        values = print_.values
        if values is None:  # too short to sign: kept by its digest and its shingle set, for its copies
            owner = self.r.hget(self._digest(print_.digest), print_.digest)
            if owner is not None and owner.decode() != key:
                return Match(owner.decode(), "exact", 1.0)
            if print_.set_digest is not None:
                owner = self.r.hget(self._digest(print_.set_digest), print_.set_digest)
                if owner is not None and owner.decode() != key:
                    return Match(owner.decode(), "near", 1.0)
                self.r.hsetnx(self._digest(print_.set_digest), print_.set_digest, key)
            self.r.hsetnx(self._digest(print_.digest), print_.digest, key)
            return None
        array = np.asarray(values).astype("<u4")
        bands = self._bands(array)
        p = self.prefix
        # The digest, the bands and this page's own earlier signature in one round trip: each
        # round trip blocks the worker's reactor (milliseconds when the cores are busy).
        owner, old, *found = execute_pipeline(self.r, lambda pipe: [
            pipe.hget(self._digest(print_.digest), print_.digest), pipe.hget(sharded(f"{p}:sig", key), key),
            *(pipe.smembers(band) for band in bands)])
        if owner is not None and owner.decode() != key:
            return Match(owner.decode(), "exact", 1.0)
        candidates = sorted({m.decode() for members in found for m in members} - {key})
        best = self.best_match(values, zip(candidates, self._signatures(candidates)), key) if candidates else None
        if best is not None:
            return best
        self._insert(key, print_.digest, array, bands, old)
        return None

    def _signatures(self, keys: list[str]) -> list[bytes | None]:
        return execute_pipeline(self.r, lambda pipe: [pipe.hget(sharded(f"{self.prefix}:sig", key), key)
                                                      for key in keys])

    def _insert(self, key: str, digest: str, values: np.ndarray, bands: list[str], old: bytes | None) -> None:
        """Make ``key`` canonical; ``old``: its signature as the index holds it (a page fetched again)."""
        p = self.prefix
        sig, keydigest = sharded(f"{p}:sig", key), sharded(f"{p}:keydigest", key)
        old_digest = self.r.hget(keydigest, key) if old is not None else None
        if old_digest is not None and self.r.hget(self._digest(old_digest.decode()), old_digest) != key.encode():
            old_digest = None  # another page's now

        def fill(pipe) -> None:  # noqa: ANN001
            if old is not None:  # a canonical page fetched again: its old bands go
                for band in self._bands(np.frombuffer(old, dtype="<u4")):
                    pipe.srem(band, key)
                if old_digest is not None:
                    pipe.hdel(self._digest(old_digest.decode()), old_digest)
            else:
                pipe.incr(f"{p}:count")
            for band in bands:
                pipe.sadd(band, key)
            pipe.hset(sig, key, values.tobytes())
            pipe.hset(keydigest, key, digest)
            pipe.hsetnx(self._digest(digest), digest, key)

        # One Redis applies it as one transaction; a cluster cannot span keys of several slots
        # (a reader may then meet a band member before its signature, and skips it).
        execute_pipeline(self.r, fill, transaction=not is_cluster(self.r))
