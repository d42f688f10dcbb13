"""The near-duplicate index shared by every worker, in Redis, in about 270 bytes a canonical page.

Same contract as :class:`~crawlproj.content.near_duplicates.NearDuplicateIndex` (exact by
content hash first, then MinHash LSH; only canonical pages enter), with the state in
Redis so a page one worker stores is matched against pages any worker stored. A page is
known by its id, 5 bytes of its URL's hash (:func:`~.keyspace.page_id`), and every table is
split into small hashes ("buckets"), which Redis keeps as listpacks: a field costs its bytes
and two more, where a key of its own costs some 70 (the one-member band sets of before):

* ``P:nd:p:<n>``  page id -> its record: a byte saying whether it is signed, the low 4 bits
                  of each MinHash value (b-bit MinHash, Li and Koenig: 64 bytes), 8 bytes of its content hash
                  (and of its shingle-set digest, for a page too short to sign), its URL
* ``P:nd:b:<n>``  an LSH band's 64-bit hash, split: the bucket ``n`` (hash mod buckets) and a
                  12-bit field -> the ids of the pages with that band (5 bytes each)
* ``P:nd:d:<n>``  8 bytes of a digest -> the id of the page holding it, for pages too short
                  to sign (a signed page's exact copies come through its bands, all nine equal)
* ``P:nd:count``  canonical pages signed; ``P:nd:capacity``: the pages the buckets are laid out for

Every entry a lookup meets is checked against the record it leads to (a 12-bit field is
shared by other bands of its bucket; an id by a few pages in a billion; a page fetched again
with other text leaves its old bands behind, pointing at a record that no longer matches),
so a shortened key can cost an extra read, never a wrong match. The estimate of a pair's
Jaccard from 4 bits of each of 128 values is ``(equal - 1/16) / (1 - 1/16)``: unbiased, its
spread at the threshold 0.037 where the full values' is 0.035.

On a Redis Cluster no command spans two keys, so the buckets spread over its masters: a check
is two round trips whatever the size of the index (the bands and the page's own record; the
candidates' records, when there are any); an insert two more (the record; the bands, each
appended by a one-key script that keeps an id once). On one Redis (``WORKERS``, a single
server) one script call looks a page up and, when its bands hold no other page, adds it: one
round trip for most pages, where the eleven commands in four took 2.5 times the worker's CPU.
"""

from __future__ import annotations

import hashlib
import logging

import numpy as np

from .. import defaults
from ..content.minhash_lsh import minhash_lsh
from ..content.near_duplicates import SET_DIGEST, Fingerprint, Match, SigningShape
from .connection import execute_pipeline, is_cluster, run_scripts
from .keyspace import bucket_count, listpack_shortfall, page_id, stored_capacity

logger = logging.getLogger(__name__)

#: Bits of each MinHash value kept (b-bit MinHash): on the bench's labelled families 4 bits
#: find exactly what 32 do (bench/near_duplicates.py, shared_index), in 64 bytes for 128 values.
SIGNATURE_BITS = 4
_CHANCE = 2.0**-SIGNATURE_BITS  # two different values share their low bits this often
ID_BYTES = 5
DIGEST_BYTES = 8
_FIELD_BITS = 12  # listpack keeps an integer up to 4095 in two bytes (13-bit encoding)
_SIGNED, _SHORT = b"\x01", b"\x00"

# Appends an id to a band's field unless it is there already (a page fetched again).
_APPEND_ID = """
local function append_id(key, field, id)
  local v = redis.call('HGET', key, field)
  if v then
    local n = string.len(id)
    for i = 1, string.len(v), n do
      if string.sub(v, i, i + n - 1) == id then return 0 end
    end
  end
  redis.call('HSET', key, field, (v or '') .. id)
  return 1
end
"""
_ADD_ID = _APPEND_ID + "return append_id(KEYS[1], ARGV[1], ARGV[2])\n"
# On one Redis (not a cluster), a page's whole add in one call: its bands are looked up, and
# unless they hold another page's id (then those ids come back, for the caller to judge; with
# ARGV[3] '1' it has judged them, and the page goes in anyway) its record goes in, counted when
# new, and its id joins each band, once. KEYS: its record's bucket, the count, its bands'
# buckets; ARGV: its id, its record, the flag, then each band's field.
_ADD_AT_ONCE = _APPEND_ID + """
local mine, n = ARGV[1], string.len(ARGV[1])
if ARGV[3] ~= '1' then
  local hits = {}
  for i = 3, #KEYS do
    local v = redis.call('HGET', KEYS[i], ARGV[i + 1])
    if v then
      for j = 1, string.len(v), n do
        local id = string.sub(v, j, j + n - 1)
        if id ~= mine then hits[#hits + 1] = id end
      end
    end
  end
  if #hits > 0 then return hits end
end
if redis.call('HSET', KEYS[1], mine, ARGV[2]) == 1 then redis.call('INCR', KEYS[2]) end
for i = 3, #KEYS do append_id(KEYS[i], ARGV[i + 1], mine) end
return {}
"""


class _NoStorage:
    """Redis writes at once; the pipeline's commit and close hooks have nothing to do."""

    def commit(self) -> None:
        pass

    def close(self) -> None:
        pass


def _short_digest(digest: str | None) -> bytes:
    """8 bytes of a hex digest (a content hash, or a shingle-set digest after its prefix)."""
    if not digest:
        return bytes(DIGEST_BYTES)
    return bytes.fromhex(digest.removeprefix(SET_DIGEST)[: 2 * DIGEST_BYTES])


def low_bits(values: np.ndarray) -> bytes:
    """The stored form of a signature: the low 4 bits of each 32-bit MinHash value, two a byte."""
    nibbles = (np.asarray(values).astype(np.uint32) & 0x0F).astype(np.uint8)
    if len(nibbles) % 2:
        nibbles = np.append(nibbles, np.uint8(0))
    return (nibbles[0::2] << 4 | nibbles[1::2]).tobytes()


def _nibbles(stored: bytes) -> np.ndarray:
    packed = np.frombuffer(stored, np.uint8)
    return np.stack((packed >> 4, packed & 0x0F), axis=1).ravel()


def estimate(stored: bytes, mine: bytes, values: int) -> float:
    """A pair's Jaccard from their b-bit signatures of ``values`` values (chance agreement taken out)."""
    equal = float(np.mean(_nibbles(stored)[:values] == _nibbles(mine)[:values]))
    return min(1.0, max(0.0, (equal - _CHANCE) / (1.0 - _CHANCE)))


class RedisNearDuplicateIndex(SigningShape):
    """A :class:`NearDuplicateIndex` whose state lives in Redis (see the module docstring)."""

    #: Each add waits on the network: the pipeline calls it off the reactor's thread (one thread,
    #: so adds keep their order; the client's connection pool serves that thread).
    remote = True

    @classmethod
    def from_settings(cls, settings, **shape) -> RedisNearDuplicateIndex:  # noqa: ANN001 - Scrapy Settings
        from . import connection

        index = cls(connection.from_settings(settings), settings.get("REDIS_PREFIX"),
                    capacity=settings.getint("SHARED_STATE_CAPACITY"), **shape)
        index.where = f"{settings.get('REDIS_URL')} ({settings.get('REDIS_PREFIX')}:nd:*)"
        if (why := listpack_shortfall(index.r)) is not None:
            logger.warning(why)
        return index

    def __init__(self, client, prefix: str, threshold: float = defaults.NEAR_DUPLICATES_THRESHOLD,
                 num_perm: int = defaults.NEAR_DUPLICATES_NUM_PERM, min_shingles: int = 1,
                 word_n: int = 5, char_n: int = 5, max_chars: int = 0,
                 capacity: int = defaults.SHARED_STATE_CAPACITY) -> None:
        super().__init__(threshold, num_perm, min_shingles, word_n, char_n, max_chars)
        self.r, self.prefix = client, f"{prefix}:nd"
        self.ranges = minhash_lsh(threshold, num_perm).hashranges  # datasketch's b x r
        self.capacity = stored_capacity(client, f"{self.prefix}:capacity", capacity)
        self.record_buckets = bucket_count(self.capacity)
        self.band_buckets = bucket_count(self.capacity * len(self.ranges))
        self.add_id = client.register_script(_ADD_ID)
        self.add_at_once = client.register_script(_ADD_AT_ONCE)
        # A cluster spreads a page's bands over its masters, where no script reaches them all.
        self.one_node = not is_cluster(client)
        self.storage = _NoStorage()

    def __len__(self) -> int:
        return int(self.r.get(f"{self.prefix}:count") or 0)

    # -- where things are ---------------------------------------------------
    def _record_key(self, pid: bytes) -> str:
        return f"{self.prefix}:p:{int.from_bytes(pid, 'big') % self.record_buckets}"

    def _digest_key(self, short: bytes) -> str:
        return f"{self.prefix}:d:{int.from_bytes(short, 'big') % self.record_buckets}"

    def _bands(self, values: np.ndarray) -> list[tuple[str, int]]:
        """(bucket key, field) of each LSH band of 32-bit ``values``."""
        out = []
        for i, (a, b) in enumerate(self.ranges):
            h = int.from_bytes(hashlib.blake2b(values[a:b].tobytes(), digest_size=8, person=bytes([i])).digest(),
                               "big")
            out.append((f"{self.prefix}:b:{h % self.band_buckets}",
                        (h // self.band_buckets) & ((1 << _FIELD_BITS) - 1)))
        return out

    # -- records --------------------------------------------------------------
    @staticmethod
    def _record(url: str, digest: str, signature: bytes | None, set_digest: str | None = None) -> bytes:
        if signature is not None:
            return _SIGNED + signature + _short_digest(digest) + url.encode("utf-8", "surrogateescape")
        return _SHORT + _short_digest(digest) + _short_digest(set_digest) + url.encode("utf-8", "surrogateescape")

    def _parse(self, raw: bytes) -> tuple[bytes | None, bytes, bytes, str]:
        """(signature or None, digest, set digest, URL) of a stored record."""
        if raw[:1] == _SIGNED:
            n = (self.num_perm + 1) // 2
            return (raw[1:1 + n], raw[1 + n:1 + n + DIGEST_BYTES], b"",
                    raw[1 + n + DIGEST_BYTES:].decode("utf-8", "surrogateescape"))
        d = DIGEST_BYTES
        return None, raw[1:1 + d], raw[1 + d:1 + 2 * d], raw[1 + 2 * d:].decode("utf-8", "surrogateescape")

    def _records(self, ids: list[bytes]) -> list[bytes | None]:
        return execute_pipeline(self.r, lambda pipe: [pipe.hget(self._record_key(i), i) for i in ids])

    # -- the contract -----------------------------------------------------------
    def add(self, key: str, print_: Fingerprint) -> Match | None:
        """The canonical page this one duplicates, or None (then ``key`` becomes canonical)."""
        if print_.empty:
            return None
        mine = page_id(key)
        if print_.values is None:  # too short to sign: kept by its digest and its shingle set, for its copies
            return self._add_short(key, mine, print_)
        array = np.asarray(print_.values).astype("<u4")
        bands, signature, digest = self._bands(array), low_bits(array), _short_digest(print_.digest)
        record = self._record(key, print_.digest, signature)
        if self.one_node:
            # One call, and for a page whose bands hold no other page (most pages) the only one.
            hits = self._add_at_once(mine, record, bands, judged=False)
            if not hits:
                return None
            ids = sorted(set(hits))
        else:
            own, *found = execute_pipeline(self.r, lambda pipe: [
                pipe.hget(self._record_key(mine), mine), *(pipe.hget(k, f) for k, f in bands)])
            ids = sorted({raw[i:i + ID_BYTES] for raw in found if raw for i in range(0, len(raw), ID_BYTES)} - {mine})
        best = self._best_match(key, ids, digest, signature)
        if best is not None:
            return best
        if self.one_node:
            self._add_at_once(mine, record, bands, judged=True)
        else:
            self._insert(mine, record, new=own is None)
            run_scripts(self.r, [(self.add_id, [k], [f, mine]) for k, f in bands])
        return None

    def _add_at_once(self, mine: bytes, record: bytes, bands: list[tuple[str, int]], judged: bool) -> list[bytes]:
        """:data:`_ADD_AT_ONCE`: the other pages' ids met in the bands (nothing added then), or []
        once the page is in; with ``judged``, it goes in whatever the bands hold."""
        return run_scripts(self.r, [(self.add_at_once, [self._record_key(mine), f"{self.prefix}:count",
                                                         *(k for k, _ in bands)],
                                     [mine, record, int(judged), *(f for _, f in bands)])])[0]

    def _best_match(self, key: str, ids: list[bytes], digest: bytes, signature: bytes) -> Match | None:
        """Of the pages ``ids``, the one whose text ``key``'s is a copy of, or the nearest above the threshold."""
        best: Match | None = None
        for raw in self._records(ids) if ids else ():
            if raw is None:
                continue
            stored, other_digest, _, url = self._parse(raw)
            if stored is None or url == key:
                continue
            if other_digest == digest:  # the same text: its signature is ours
                return Match(url, "exact", 1.0)
            jaccard = estimate(stored, signature, self.num_perm)
            if jaccard >= self.threshold and (best is None or jaccard > best.jaccard):
                best = Match(url, "near", jaccard)
        return best

    def _add_short(self, key: str, mine: bytes, print_: Fingerprint) -> Match | None:
        """A page too short to sign: matched by its digest (exact), then its shingle set (near)."""
        digest, set_digest = _short_digest(print_.digest), _short_digest(print_.set_digest)
        wanted = [(digest, "exact")] + ([(set_digest, "near")] if print_.set_digest else [])
        owners = execute_pipeline(self.r, lambda pipe: [pipe.hget(self._digest_key(d), d) for d, _ in wanted])
        ids = [o for o in owners if o is not None]
        records = dict(zip(ids, self._records(ids))) if ids else {}
        for (short, kind), owner in zip(wanted, owners):
            raw = records.get(owner)
            if raw is None:
                continue
            stored, other_digest, other_set, url = self._parse(raw)
            if url != key and short == (other_digest if kind == "exact" else other_set):
                return Match(url, kind, 1.0)
        self._insert(mine, self._record(key, print_.digest, None, print_.set_digest), new=False)

        def claim(pipe) -> None:  # noqa: ANN001 - no other page holds these digests (checked above)
            for short, _ in wanted:
                pipe.hset(self._digest_key(short), short, mine)

        execute_pipeline(self.r, claim)
        return None

    def _insert(self, mine: bytes, record: bytes, new: bool) -> None:
        """The record first: a reader meeting a band's id before its record skips it."""
        def fill(pipe) -> None:  # noqa: ANN001
            pipe.hset(self._record_key(mine), mine, record)
            if new:
                pipe.incr(f"{self.prefix}:count")

        execute_pipeline(self.r, fill)
