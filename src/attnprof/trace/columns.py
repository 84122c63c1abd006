"""Python values to compact numpy columns: the conversions :class:`TableBuilder` uses.

Each function takes one column's worth of decoded values and returns an array, turning
values that do not fit (ints beyond int64, wrong types from a malformed event) into the
column's absent value instead of failing. Id columns are stored narrow (:func:`narrow`).
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

__all__ = [
    "Column",
    "absent",
    "as_float",
    "char_code",
    "dims",
    "exact_ts",
    "float_column",
    "i64",
    "id_column",
    "int_column",
    "int_or_hex",
    "ints_minus",
    "narrow",
]

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def exact_ts(raw: msgspec.Raw | bytes, origin: int) -> float:
    """``raw - origin`` in µs, computed before rounding to float64 (nan if not a number).

    ``1712195495519689.047`` as a float64 is off by up to 0.125 µs; split at the dot, the
    integer part minus the integer origin is exact and the fraction keeps its nanoseconds.
    """
    text = bytes(raw)
    sign = -1 if text[:1] == b"-" else 1
    head, dot, frac = (text[1:] if sign < 0 else text).partition(b".")
    try:
        if head.isdigit() and (not dot or frac.isdigit()):
            whole = sign * int(head) - origin
            return whole + sign * float(b"0." + frac) if dot else float(whole)
        value = float(text) - origin  # exponents; strings and null raise
        return value if math.isfinite(value) else math.nan
    except (ValueError, OverflowError):
        return math.nan


def ints_minus(values: list[int], origin: int) -> np.ndarray:
    """``values - origin`` as float64, subtracting exactly before rounding."""
    if abs(origin) < 2**62 and all(abs(v) < 2**62 for v in (min(values), max(values))):
        return (np.array(values, dtype=np.int64) - origin).astype(np.float64)
    out = []
    for v in values:  # beyond int64: Python ints, and nan past float range
        try:
            out.append(float(v - origin))
        except OverflowError:
            out.append(math.nan)
    return np.array(out, dtype=np.float64)


def int_column(values: Sequence[Any]) -> np.ndarray:
    """The narrowest int dtype that fits; ints beyond int64 and non-ints become -1."""
    try:
        arr = np.fromiter(values, dtype=np.int64, count=len(values))
    except (OverflowError, TypeError, ValueError):
        arr = np.fromiter(map(i64, values), dtype=np.int64, count=len(values))
    return narrow(arr)


def id_column(values: Sequence[int | str]) -> np.ndarray:
    """Like :func:`int_column`, reading ids written as strings ("0x0", "7") too."""
    try:
        return narrow(np.fromiter(values, dtype=np.int64, count=len(values)))
    except (OverflowError, TypeError, ValueError):
        return int_column([int_or_hex(v) for v in values])


_INT_RANGES = [
    (t, int(np.iinfo(t).min), int(np.iinfo(t).max)) for t in (np.int8, np.int16, np.int32)
]


def narrow(arr: np.ndarray) -> np.ndarray:
    """``arr`` in the narrowest signed int dtype holding its values (ids: nothing adds them)."""
    if arr.size == 0:
        return arr.astype(np.int8)
    lo, hi = int(arr.min()), int(arr.max())
    for t, t_min, t_max in _INT_RANGES:
        if t_min <= lo and hi <= t_max:
            return arr.astype(t, copy=False)
    return arr


def absent(n: int) -> np.ndarray:
    """An id column of ``n`` absent values (-1), narrow: rows of a side table not read."""
    return np.full(n, -1, dtype=np.int8)


def float_column(values: Sequence[Any]) -> np.ndarray:
    """float64; None and ints beyond float range become nan."""
    try:
        return np.array(values, dtype=np.float64)
    except (OverflowError, TypeError, ValueError):
        return np.array([as_float(v) for v in values], dtype=np.float64)


def int_or_hex(value: Any) -> int:
    """A stream or flow id written as a string ("0x0", "7"); -1 when it is not a number."""
    if type(value) is int:  # bool is not an id
        return value
    try:
        return int(value, 0) if isinstance(value, str) else -1
    except ValueError:
        return -1


def char_code(text: str) -> bytes:
    """A one-character phase code as bytes; ``b""`` absent, ``b"?"`` anything else."""
    if len(text) == 1 and text.isascii():
        return text.encode()
    return b"?" if text else b""


def i64(value: Any) -> int:
    """``value`` if it is an int that fits int64, else -1."""
    return value if type(value) is int and _I64_MIN <= value <= _I64_MAX else -1


def as_float(value: Any) -> float:
    if type(value) is float:
        return value
    try:
        return float(value) if type(value) is int else math.nan
    except OverflowError:
        return math.nan


def dims(value: Any) -> tuple[int, int, int]:
    """Grid or block as exactly three ints; -1 for missing or non-int entries."""
    if not isinstance(value, list):
        return (-1, -1, -1)
    xs = [i64(v) for v in value[:3]]
    return tuple(xs + [-1] * (3 - len(xs)))  # type: ignore[return-value]


def _anonymous_map(size: int) -> mmap.mmap:
    # Private, so a forked child that writes to a table does not change its parent's.
    if hasattr(mmap, "MAP_PRIVATE"):
        return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
    return mmap.mmap(-1, size)  # Windows: anonymous maps are private already


class Column:
    """An append-only numpy column in anonymous ``mmap`` memory.

    Why not a list of per-batch arrays joined at the end: thousands of small arrays live in
    the malloc heap, and freeing them after the join does not give the memory back to the
    OS, so the peak would be twice the table. Here the column grows by resizing its map
    (``mremap`` on Linux: no copy, no second column in memory), pages past the end are never
    touched, and the memory goes back to the OS as soon as the column is dropped.
    """

    def __init__(self, dtype: Any) -> None:
        self.dtype = np.dtype(dtype)
        self.n = 0
        self._map: mmap.mmap | None = None
        self._capacity = 0  # in elements
        # A view of the whole capacity, made once per growth rather than per batch; dropped
        # before the map is resized (a map with a live view cannot be).
        self._view: np.ndarray | None = None

    def append(self, values: np.ndarray) -> None:
        # A wider part (an id column past int8, say) widens the column: the same result as
        # concatenating, so the dtype does not depend on batching.
        end = self.n + len(values)
        dtype = self.dtype if values.dtype == self.dtype else np.result_type(self.dtype,
                                                                             values.dtype)
        if dtype != self.dtype:
            self._rewrite(dtype, max(end, 2 * self._capacity, 4096))
        elif end > self._capacity:
            self._grow(max(end, 2 * self._capacity, 4096))
        if len(values):
            if self._view is None:
                assert self._map is not None
                self._view = np.frombuffer(self._map, self.dtype, count=self._capacity)
            self._view[self.n : end] = values
        self.n = end

    def _grow(self, capacity: int) -> None:
        self._view = None
        size = capacity * self.dtype.itemsize
        if self._map is not None:
            try:
                self._map.resize(size)  # views into the map are never kept while loading
                self._capacity = capacity
                return
            except (OSError, SystemError, TypeError, ValueError):
                pass  # a platform without anonymous mremap: copy instead
        self._rewrite(self.dtype, capacity)

    def _rewrite(self, dtype: np.dtype[Any], capacity: int) -> None:
        self._view = None
        new = _anonymous_map(capacity * dtype.itemsize)
        if self._map is not None and self.n:
            np.frombuffer(new, dtype, count=self.n)[:] = np.frombuffer(
                self._map, self.dtype, count=self.n
            )
        self._map, self.dtype, self._capacity = new, dtype, capacity

    def array(self) -> np.ndarray:
        """The column (a view: untouched capacity costs address space, not memory)."""
        if self._map is None:
            return np.empty(0, dtype=self.dtype)
        self._view = None  # the column is done growing: no view of its spare capacity
        return np.frombuffer(self._map, self.dtype, count=self.n)
