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
    "as_float",
    "char_code",
    "dims",
    "exact_ts",
    "float_column",
    "i64",
    "id_column",
    "int_or_hex",
    "int_column",
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


_INT_TYPES = (np.int8, np.int16, np.int32, np.int64)


def narrow(arr: np.ndarray) -> np.ndarray:
    """``arr`` in the narrowest signed int dtype holding its values (ids: nothing adds them)."""
    if arr.size == 0:
        return arr.astype(np.int8)
    lo, hi = int(arr.min()), int(arr.max())
    for t in _INT_TYPES:
        info = np.iinfo(t)
        if info.min <= lo and hi <= info.max:
            return arr.astype(t, copy=False)
    return arr


def float_column(values: Sequence[Any]) -> np.ndarray:
    """float64; None and ints beyond float range become nan."""
    try:
        return np.array(values, dtype=np.float64)
    except (OverflowError, TypeError, ValueError):
        return np.array([as_float(v) for v in values], dtype=np.float64)


def int_or_hex(value: Any) -> int:
    """A stream or flow id written as a string ("0x0", "7"); -1 when it is not a number."""
    if type(value) is int:  # noqa: E721 - bool is not an id
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
    return value if type(value) is int and _I64_MIN <= value <= _I64_MAX else -1  # noqa: E721


def as_float(value: Any) -> float:
    if type(value) is float:  # noqa: E721
        return value
    try:
        return float(value) if type(value) is int else math.nan  # noqa: E721
    except OverflowError:
        return math.nan


def dims(value: Any) -> tuple[int, int, int]:
    """Grid or block as exactly three ints; -1 for missing or non-int entries."""
    if not isinstance(value, list):
        return (-1, -1, -1)
    xs = [i64(v) for v in value[:3]]
    return tuple(xs + [-1] * (3 - len(xs)))  # type: ignore[return-value]


class Column:
    """An append-only numpy column in anonymous ``mmap`` memory, grown by doubling.

    Why not a list of per-batch arrays joined at the end: thousands of small arrays live in
    the malloc heap, and freeing them after the join does not give the memory back to the
    OS, so the peak would be twice the table. Memory mapped here is returned as soon as it is
    dropped, and pages past the end are never touched, so RSS tracks what was written.
    """

    def __init__(self, dtype: Any) -> None:
        self._data = np.empty(0, dtype=dtype)
        self.n = 0

    def append(self, values: np.ndarray) -> None:
        # A wider part (an id column past int8, say) widens the column: same result as
        # concatenating, so the dtype does not depend on batching.
        dtype = np.result_type(self._data.dtype, values.dtype)
        end = self.n + len(values)
        if end > len(self._data) or dtype != self._data.dtype:
            grown = np.frombuffer(
                mmap.mmap(-1, max(end, 2 * len(self._data), 4096) * dtype.itemsize), dtype
            )
            grown[: self.n] = self._data[: self.n]
            self._data = grown
        self._data[self.n : end] = values
        self.n = end

    def array(self) -> np.ndarray:
        """The column so far (a view: untouched capacity costs address space, not memory)."""
        return self._data[: self.n]
