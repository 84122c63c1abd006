"""Sweep grids: which workload fields take several values, and the points they make.

A sweep flag takes a list, a range or a mix of both::

    --seq 256,512,1024         a list
    --seq 256..8192x2          a geometric range: 256, 512, ..., 8192 (ends included when hit)
    --batch 1..8+1             an arithmetic range: 1, 2, ..., 8
    --seq 100,256..1024x2      both

Parsing is pure (no torch) and every mistake is a :class:`UsageError` that names the flag,
the bad text and the fix. Values of a field are sorted and de-duplicated, so the grid runs
from small to large: a variant that runs out of memory at one point lets every point at
least as large be inferred (:func:`covers`) instead of run.

A :class:`Grid` is plain data kept in the sweep record. Its points are plain
``{field: value}`` dicts (``coords``), so points of another kind (a model sweep's
``model`` field) can join the same record later without a new grid type.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping

import msgspec

from attnprof.errors import UsageError
from attnprof.workload.problem import MODES, canonical_dtype

__all__ = ["INTEGER_FIELDS", "MAX_POINTS", "MAX_VALUES", "SWEEPABLE", "Axis", "Coords", "Grid",
           "covers", "describe_coords", "flag_of", "parse_axis", "parse_choices"]

#: Workload fields that take sizes (lists or ranges of positive integers).
INTEGER_FIELDS: tuple[str, ...] = ("batch", "heads", "kv_heads", "seq", "kv_seq", "head_dim",
                                   "window")
#: Every field a sweep can vary: the sizes, then the lists of names.
SWEEPABLE: tuple[str, ...] = (*INTEGER_FIELDS, "dtype", "mode")
#: Values one field may take, and points one sweep may have: far beyond any useful sweep,
#: low enough that a typo (``1..1000000+1``) is refused instead of queued for days.
MAX_VALUES = 512
MAX_POINTS = 4096
#: Largest size accepted: a tensor dimension beyond it cannot be indexed by 32-bit kernels
#: and no device holds such a tensor anyway.
MAX_SIZE = 2**31 - 1

Coords = dict[str, "int | str"]
_RANGE = re.compile(r"^\s*(?P<start>[^.]+?)\s*\.\.\s*(?P<stop>[^x+]+?)\s*"
                    r"(?:(?P<op>[x+])\s*(?P<by>.+?))?\s*$")
_FORMS = "N, N,M,..., A..BxF (geometric, e.g. 256..8192x2) or A..B+S (arithmetic, e.g. 1..8+1)"


def flag_of(field: str) -> str:
    """``"kv_seq"`` -> ``"--kv-seq"``."""
    return "--" + field.replace("_", "-")


def parse_axis(field: str, text: str) -> tuple[int, ...]:
    """The sorted, distinct sizes ``text`` names for ``field`` (see the module doc)."""
    flag = flag_of(field)
    values: set[int] = set()
    items = text.split(",")
    for item in items:
        if not item.strip():
            raise UsageError(f"{flag} {text!r}: an empty value between commas; write e.g. "
                             f"{flag} 256,512")
        values.update(_parse_item(flag, item.strip()))
        if len(values) > MAX_VALUES:
            break
    if len(values) > MAX_VALUES:
        raise UsageError(f"{flag} {text!r} gives more than {MAX_VALUES} values; use a larger "
                         "step or a geometric range (A..BxF)")
    return tuple(sorted(values))


def _parse_item(flag: str, item: str) -> list[int]:
    match = _RANGE.match(item)
    if match is None:
        return [_size(flag, item, item)]
    start = _size(flag, item, match["start"])
    stop = _size(flag, item, match["stop"])
    op, by = match["op"], match["by"]
    if op is None:
        raise UsageError(f"{flag} {item!r}: say how to step from {start} to {stop}: "
                         f"{start}..{stop}x2 (geometric) or {start}..{stop}+{start} (arithmetic)")
    step = _size(flag, item, by, what="step") if op == "+" else 0
    factor = _factor(flag, item, by) if op == "x" else 0.0
    if stop < start:
        raise UsageError(f"{flag} {item!r}: the range ends below its start; write "
                         f"{stop}..{start}{op}{by}")
    if op == "+":
        count = (stop - start) // step + 1
        if count > MAX_VALUES:
            raise UsageError(f"{flag} {item!r} gives {count} values, more than {MAX_VALUES}; "
                             "use a larger step or a geometric range (A..BxF)")
        return list(range(start, stop + 1, step))
    count = int(math.log(stop / start) / math.log(factor) + 1e-9) + 1
    if count > MAX_VALUES:
        raise UsageError(f"{flag} {item!r} gives {count} values, more than {MAX_VALUES}; "
                         "use a larger factor")
    # Rounded at every step from the exact power, so x1.5 does not drift.
    return sorted({round(start * factor**k) for k in range(count)
                   if round(start * factor**k) <= stop})


def _size(flag: str, item: str, text: str, what: str = "size") -> int:
    text = text.strip().replace("_", "")
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{flag} {item!r}: {text!r} is not a whole number; use {_FORMS}"
                         ) from None
    if value <= 0:
        raise UsageError(f"{flag} {item!r}: a {what} must be a positive integer, got {value}; "
                         "start at 1 or more")
    if value > MAX_SIZE:
        raise UsageError(f"{flag} {item!r}: {value} is larger than any tensor dimension "
                         f"attnprof runs ({MAX_SIZE}); use a smaller {what}")
    return value


def _factor(flag: str, item: str, text: str) -> float:
    try:
        factor = float(text)
    except ValueError:
        raise UsageError(f"{flag} {item!r}: factor {text!r} is not a number; use e.g. x2"
                         ) from None
    if not math.isfinite(factor) or factor <= 1:
        raise UsageError(f"{flag} {item!r}: a geometric factor must be a finite number above "
                         f"1, got {text}; use e.g. x2")
    return factor


def parse_choices(field: str, text: str) -> tuple[str, ...]:
    """The distinct names in ``text`` for a field of names (``dtype``, ``mode``), in the
    order given, canonicalised (``bf16`` -> ``bfloat16``)."""
    flag = flag_of(field)
    names = [part.strip() for part in text.split(",")]
    if not all(names):
        raise UsageError(f"{flag} {text!r}: an empty value between commas; write e.g. "
                         f"{flag} {'float32,bfloat16' if field == 'dtype' else 'forward'}")
    if field == "dtype":
        return tuple(dict.fromkeys(canonical_dtype(n) for n in names))
    if field == "mode":
        for name in names:
            if name not in MODES:
                raise UsageError(f"{flag} {name!r} is not a mode; use one or more of "
                                 f"{', '.join(MODES)}")
        return tuple(dict.fromkeys(names))
    raise ValueError(f"{field!r} is not a field of names")


class Axis(msgspec.Struct, frozen=True, kw_only=True):
    """One swept field and its values, in the order they run."""

    field: str
    values: list[int | str]


class Grid(msgspec.Struct, frozen=True, kw_only=True):
    """The swept fields; the sweep is the product of their values (first axis outermost)."""

    axes: list[Axis] = msgspec.field(default_factory=list)

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(a.field for a in self.axes)

    def points(self) -> list[Coords]:
        """Every point's coordinates, in run order."""
        if not self.axes:
            return [{}]
        names = self.fields
        return [dict(zip(names, combo, strict=True))
                for combo in itertools.product(*(a.values for a in self.axes))]

    def size(self) -> int:
        """How many points the grid has."""
        return math.prod(len(a.values) for a in self.axes)

    def check_size(self, variants: int) -> Grid:
        """Refuse a grid too large to mean what it says (see :data:`MAX_POINTS`)."""
        n = self.size()
        if n > MAX_POINTS:
            sizes = " × ".join(f"{len(a.values)} {flag_of(a.field)}" for a in self.axes)
            raise UsageError(f"the sweep has {n} points ({sizes}), more than {MAX_POINTS}; "
                             "sweep fewer fields or fewer values")
        if variants < 1:
            raise UsageError("--variants is empty; name at least one variant")
        return self


def covers(larger: Mapping[str, int | str], smaller: Mapping[str, int | str]) -> bool:
    """Whether ``larger`` is at least as large as ``smaller`` in every field: sizes compare,
    names (dtype, mode) must be equal, and the two must have the same fields."""
    if larger.keys() != smaller.keys():
        return False
    for name, value in larger.items():
        other = smaller[name]
        if isinstance(value, int) and isinstance(other, int):
            if value < other:
                return False
        elif value != other:
            return False
    return True


def describe_coords(coords: Mapping[str, int | str]) -> str:
    """``seq=1024 batch=2``; ``(the only point)`` for an empty grid."""
    if not coords:
        return "(the only point)"
    return " ".join(f"{k}={v}" for k, v in coords.items())
