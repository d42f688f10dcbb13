"""datasketch's MinHash and MinHashLSH, without SciPy at start-up (pure logic: no Scrapy, no I/O).

``datasketch.lsh`` imports ``scipy.integrate`` when it loads, only to choose an index's bands
and rows for its threshold (``MinHashLSH`` integrates the false-positive and false-negative
probabilities of every (b, r) with ``scipy.integrate.quad``, about 1,400 integrals). That import
cost every crawl process 0.6 CPU-s before its first request, and the choice another 0.1 s.

Here the same choice is made by :func:`lsh_params`: each probability is a polynomial in the
Jaccard similarity of degree b x r <= ``num_perm``, so Gauss-Legendre quadrature with
``num_perm // 2 + 1`` nodes integrates it exactly, for every (b, r) in one numpy operation (a
test checks the choice against datasketch's own). :func:`minhash_lsh` passes it to
``MinHashLSH(params=...)``, and datasketch is imported with a stand-in for
``scipy.integrate`` whose functions load the real module if anything ever calls them; the
stand-in leaves ``sys.modules`` as soon as datasketch is loaded.
"""

from __future__ import annotations

import importlib
import sys
import types
from functools import lru_cache
from typing import Any

import numpy as np


def _import_datasketch() -> types.ModuleType:
    if "datasketch" in sys.modules or "scipy.integrate" in sys.modules:
        return importlib.import_module("datasketch")

    def deferred(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(importlib.import_module("scipy.integrate"), name)(*args, **kwargs)

        return call

    stand_in = types.ModuleType("scipy.integrate")
    stand_in.__getattr__ = deferred  # PEP 562: `from scipy.integrate import X` gets a deferred X
    sys.modules["scipy.integrate"] = stand_in
    try:
        return importlib.import_module("datasketch")
    finally:
        if sys.modules.get("scipy.integrate") is stand_in:
            del sys.modules["scipy.integrate"]


_datasketch = _import_datasketch()
LeanMinHash = _datasketch.LeanMinHash
MinHash = _datasketch.MinHash
MinHashLSH = _datasketch.MinHashLSH


@lru_cache(maxsize=None)
def lsh_params(threshold: float, num_perm: int, false_positive_weight: float = 0.5,
               false_negative_weight: float = 0.5) -> tuple[int, int]:
    """(bands, rows) minimising the weighted false-positive and false-negative probabilities at
    ``threshold``: datasketch's ``_optimal_param``, integrated exactly."""
    pairs = np.array([(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)], dtype=float)
    bands, rows = pairs[:, :1], pairs[:, 1:]
    nodes, weights = np.polynomial.legendre.leggauss(num_perm // 2 + 1)

    def integral(low: float, high: float, below: bool) -> np.ndarray:
        s = (high - low) / 2 * nodes + (high + low) / 2  # the nodes mapped onto [low, high]
        candidate = 1 - (1 - s**rows) ** bands  # P(a pair at similarity s shares a band)
        return (high - low) / 2 * ((candidate if below else 1 - candidate) @ weights)

    error = (false_positive_weight * integral(0.0, threshold, True)
             + false_negative_weight * integral(threshold, 1.0, False))
    b, r = pairs[int(np.argmin(error))]  # the first of equals, as datasketch's loop keeps it
    return int(b), int(r)


def minhash_lsh(threshold: float, num_perm: int) -> Any:
    """A datasketch ``MinHashLSH`` at ``threshold`` whose bands and rows :func:`lsh_params` chose."""
    return MinHashLSH(threshold=threshold, num_perm=num_perm, params=lsh_params(threshold, num_perm))
