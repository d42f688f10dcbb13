"""Where the shared state lives in Redis: key names laid out for a Redis Cluster (pure).

A Lua script runs on one node and may touch the keys of one hash slot only, so the keys one
script touches share a hash tag (the part in braces, which alone picks the slot):

* ``{P:<part>}:...``       one frontier partition: its hosts' queues, the ready set, leases,
                           pending entries, counters, and the URL-seen Bloom filters of its
                           hosts (layout in :mod:`.scripts`); partitions spread over the masters
* ``{P}:...``              the workers, and which partition each one holds
* ``{P:g:<address>}:...``  one server's per-IP cap and rate, counted across workers

Tables no script spans (near-duplicate digests and signatures, the ordering tables) are
split into :data:`HASH_SHARDS` hashes by field, so none grows beyond its share of the crawl
and the shards spread over the masters too. A single Redis takes the same layout.
"""

from __future__ import annotations

import hashlib
import math
import zlib
from collections.abc import Hashable

#: Hashes a large table is split into (a layout constant: changing it strands stored data).
HASH_SHARDS = 256
#: Written under ``{P}:layout`` by the first worker: a prefix of another layout is refused.
LAYOUT = "2"


def partition_of(key: Hashable, partitions: int) -> int:
    """The partition owning politeness key ``key`` (stable across processes and machines)."""
    return zlib.crc32(str(key).encode("utf-8")) % partitions


def partition_tag(prefix: str, part: int) -> str:
    return f"{{{prefix}:{part}}}"


def meta_tag(prefix: str) -> str:
    return f"{{{prefix}}}"


def group_tag(prefix: str, group: object) -> str:
    return f"{{{prefix}:g:{group}}}"


def shard_of(field: str | bytes, shards: int = HASH_SHARDS) -> int:
    return zlib.crc32(field if isinstance(field, bytes) else field.encode("utf-8", "surrogateescape")) % shards


def sharded(key: str, field: str | bytes, shards: int = HASH_SHARDS) -> str:
    """The hash of table ``key`` that holds ``field``."""
    return f"{key}:{shard_of(field, shards)}"


#: Entries a bucket hash holds at the crawl size it was laid out for: half of Redis's default
#: hash-max-listpack-entries (128), so a crawl twice its planned size still keeps the compact form.
BUCKET_ENTRIES = 64


def bucket_count(entries: int) -> int:
    """Buckets (a power of two) that hold ``entries`` at about :data:`BUCKET_ENTRIES` each."""
    return 1 << max(0, math.ceil(math.log2(max(1, entries) / BUCKET_ENTRIES)))


def page_id(url: str, size: int = 5) -> bytes:
    """A URL's id in the shared tables: ``size`` bytes of its BLAKE2b (40 bits: among a billion
    URLs a few hundred thousand pairs share one, and each such pair only loses its older entry)."""
    return hashlib.blake2b(url.encode("utf-8", "surrogateescape"), digest_size=size).digest()


def stored_capacity(client, key: str, wanted: int) -> int:  # noqa: ANN001 - a Redis client
    """The capacity the shared tables under ``key`` were laid out for: the first worker's ``wanted``."""
    client.set(key, wanted, nx=True)
    return int(client.get(key))


#: The shared tables' fields are 70-250 bytes: Redis keeps their hashes compact (listpack) only
#: with ``hash-max-listpack-value`` at least this (by its default, 64, each field is an entry of
#: a hash table of its own, with its pointers and allocations).
LISTPACK_VALUE = 256


def listpack_shortfall(client) -> str | None:  # noqa: ANN001 - a Redis client
    """Why the shared tables would take more memory than planned on this Redis, or None."""
    try:
        found = client.config_get("hash-max-listpack-value")
    except Exception:  # noqa: BLE001 - CONFIG may be renamed or refused (a managed Redis): no judgment
        return None
    values = found.values() if isinstance(found, dict) else ()
    low = [int(v) for v in values if str(v).isdigit() and int(v) < LISTPACK_VALUE]
    return (f"Redis has hash-max-listpack-value {min(low)}: set it to {LISTPACK_VALUE} or more, or the shared "
            f"near-duplicate index and revisit state take more memory than planned (docs/distributed.md)") if low else None
