"""Distinct integers and pairs of integers, the grouping the analysis does everywhere.

``np.unique(..., axis=1)`` on a 2-row array finds distinct pairs too, but sorts rows as raw
bytes, several times slower than one int64 key per pair; plain ``np.unique(a)`` imports
``numpy.ma`` on first use (to check for masked arrays), which ``attnprof analyze``, where
start-up time counts, does not otherwise need.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import msgspec
import numpy as np

__all__ = ["Pairs", "distinct", "is_in", "levels_order", "names_matching", "unique_ids",
           "unique_pairs"]


def distinct(values: np.ndarray | Sequence[int]) -> np.ndarray:
    """The distinct values of a 1-d array, sorted (``np.unique`` without ``numpy.ma``)."""
    ordered = np.sort(np.asarray(values).reshape(-1))
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered


def is_in(values: np.ndarray, test: np.ndarray | Sequence[int]) -> np.ndarray:
    """Per entry of ``values``: whether it is one of ``test`` (``np.isin`` without
    ``numpy.ma``, which ``np.isin`` imports to find the distinct values of a long ``test``)."""
    keys = distinct(test)
    values = np.asarray(values)
    if len(keys) == 0:
        return np.zeros(values.shape, dtype=bool)
    at = np.minimum(np.searchsorted(keys, values), len(keys) - 1)
    return keys[at] == values


def names_matching(ids: np.ndarray, text: Callable[[int], str],
                   pattern: str | re.Pattern[str]) -> np.ndarray:
    """Per entry of ``ids`` (interned string ids): whether its text matches ``pattern``
    (``re.search``); the absent id -1 never does. Each distinct id is searched once: the
    few hundred names of a column, not the thousands of strings (shapes, long kernel
    names) a trace's string table holds."""
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern
    ids = np.asarray(ids)
    if len(ids) == 0:
        return np.zeros(0, dtype=bool)
    found = distinct(ids)
    hit = np.array([i >= 0 and rx.search(text(i)) is not None for i in found.tolist()],
                   dtype=bool)
    return hit[np.searchsorted(found, ids)]


def levels_order(levels: np.ndarray) -> np.ndarray:
    """``np.argsort(levels, kind="stable")`` of non-negative small ints (nesting depths):
    numpy sorts 16-bit ints stably by radix, in linear time."""
    small = len(levels) == 0 or int(levels.max()) <= np.iinfo(np.int16).max
    return np.argsort(levels.astype(np.int16) if small else levels, kind="stable")


class Pairs(msgspec.Struct, frozen=True):
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
    if (int(a.max()) - a_min + 1) * span >= 2**63:
        # Ids this far apart (a pid of 4e12 beside a tid of 1, a damaged file's huge id)
        # do not combine into one int64 key: sort the pairs themselves instead.
        return _sorted_pairs(a, b)
    key = (a - a_min) * span + (b - b_min)
    keys, index, inverse, counts = _unique(key, (int(a.max()) - a_min + 1) * span)
    return Pairs(first=keys // span + a_min, second=keys % span + b_min, index=index,
                 inverse=inverse, counts=counts)


def unique_ids(values: np.ndarray) -> Pairs:
    """:func:`unique_pairs` of one array of integers (``second`` is all zeros), without
    building the all-zero second member and the pair keys: on millions of ids those
    temporaries cost more than the grouping (fresh pages to fault in)."""
    a = np.asarray(values, dtype=np.int64)
    if not len(a):
        empty = np.zeros(0, dtype=np.int64)
        return Pairs(empty, empty, empty, empty, empty)
    a_min = int(a.min())
    if int(a.max()) - a_min >= 2**63 - 1:  # a - a_min would wrap around in int64
        found = _sorted_pairs(a, np.zeros(len(a), dtype=np.int64))
        return Pairs(found.first, np.zeros(len(found.first), dtype=np.int64), found.index,
                     found.inverse, found.counts)
    keys, index, inverse, counts = _unique(a - a_min, int(a.max()) - a_min + 1)
    return Pairs(first=keys + a_min, second=np.zeros(len(keys), dtype=np.int64), index=index,
                 inverse=inverse, counts=counts)


def _unique(key: np.ndarray, span: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(key, return_index, return_inverse, return_counts)`` of keys in
    ``[0, span)``. Ids (names, call paths) span a small range, and then counting them is
    linear where sorting is not: millions of kernels or ops have a few thousand names."""
    n = len(key)
    if span > 4 * n + (1 << 16):
        keys, index, inverse, counts = np.unique(key, return_index=True, return_inverse=True,
                                                 return_counts=True)
        return keys, index, inverse.reshape(-1), counts
    seen = np.bincount(key, minlength=span)
    keys = np.flatnonzero(seen)
    rank = np.cumsum(seen > 0) - 1
    first = np.full(span, n, dtype=np.int64)
    np.minimum.at(first, key, np.arange(n, dtype=np.int64))
    return keys, first[keys], rank[key], seen[keys]


def _sorted_pairs(a: np.ndarray, b: np.ndarray) -> Pairs:
    """:func:`unique_pairs` by one stable sort of the pairs, for any int64 values."""
    order = np.lexsort((b, a))  # stable: each group's first position is its earliest
    sa, sb = a[order], b[order]
    new = np.r_[True, (sa[1:] != sa[:-1]) | (sb[1:] != sb[:-1])]
    starts = np.flatnonzero(new)
    inverse = np.empty(len(a), dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    return Pairs(first=sa[starts], second=sb[starts], index=order[starts], inverse=inverse,
                 counts=np.diff(np.r_[starts, len(a)]))
