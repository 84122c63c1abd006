"""Distinct pairs of integers, found by sorting one int64 key per pair.

``np.unique(..., axis=1)`` on a 2-row array does the same but sorts rows as raw bytes,
several times slower; the analysis groups by pairs (call path and name, thread id pairs)
often enough for that to show.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Pairs", "unique_pairs"]


@dataclass(frozen=True)
class Pairs:
    """The distinct pairs in sorted order, and where the input's pairs are among them."""

    first: np.ndarray  # the pairs' first members
    second: np.ndarray  # the pairs' second members
    index: np.ndarray  # where each distinct pair first occurs in the input
    inverse: np.ndarray  # for each input pair, its distinct pair
    counts: np.ndarray  # how often each distinct pair occurs


def unique_pairs(a: np.ndarray, b: np.ndarray) -> Pairs:
    """The distinct ``(a[i], b[i])``, ordered by ``a`` then ``b`` (as ``np.unique`` would)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if not len(a):
        empty = np.zeros(0, dtype=np.int64)
        return Pairs(empty, empty, empty, empty, empty)
    a_min, b_min = int(a.min()), int(b.min())
    span = int(b.max()) - b_min + 1
    if (int(a.max()) - a_min + 1) * span >= 2**63:  # ids this far apart are never seen
        raise ValueError("pair members too far apart to combine into one int64 key")
    key = (a - a_min) * span + (b - b_min)
    keys, index, inverse, counts = np.unique(key, return_index=True, return_inverse=True,
                                             return_counts=True)
    return Pairs(first=keys // span + a_min, second=keys % span + b_min, index=index,
                 inverse=inverse.reshape(-1), counts=counts)
