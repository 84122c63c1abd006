"""Which fields of a Chrome trace event attnprof keeps, declared once.

The loader decodes ``traceEvents`` straight into these :mod:`msgspec` structs. A struct
declares only the fields the analysis needs; msgspec skips every other key without building
a Python object for it, which is most of what makes loading fast and lean (a torch.profiler
event carries a dozen args we never read: "Ev Idx", "cbid", "queued", "Call stack", ...).

Defaults double as the table's sentinels: ``-1`` for an absent id, ``nan`` for an absent
float, ``None``/empty for an absent object. Keys with spaces are mapped with
``msgspec.field(name=...)`` so the Python side has plain identifiers.

There are two families:

* :class:`Event`/:class:`Args`, typed, the fast path. One wrong-typed value anywhere in a
  batch makes msgspec reject the whole batch.
* :class:`LooseEvent`/:class:`LooseArgs`, the same keys typed ``Any`` (or :class:`msgspec.Raw`),
  used only to re-read such a batch event by event, so that one odd event degrades one row
  instead of the whole trace. ``ts`` and ``dur`` are kept raw there: ``ts`` to be read
  exactly, and so that a value out of float range does not make the whole event unreadable.

The structs use ``gc=False``: they hold only strings, numbers and lists of numbers, so they
cannot form reference cycles, and keeping hundreds of thousands of them out of the cyclic
garbage collector more than halves decoding time.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
from msgspec import field

__all__ = ["HEADER_KEYS", "NO_RAW", "Args", "Event", "LooseArgs", "LooseEvent", "RawTs", "to_event"]

NAN = math.nan
# An empty Raw is the "absent" value for raw fields: msgspec does not allow ``Raw | None``.
NO_RAW = msgspec.Raw()

# Top-level keys outside ``traceEvents`` that attnprof keeps (header and trailer alike).
HEADER_KEYS = (
    "schemaVersion",
    "deviceProperties",
    "distributedInfo",
    "displayTimeUnit",
    "baseTimeNanoseconds",
    "traceName",
    "attnprof",  # the metadata block attnprof's own captures add (variant, workload, steps)
)


class Args(msgspec.Struct, gc=False):
    """The ``args`` keys attnprof reads, typed for the fast path."""

    correlation: int = -1
    external_id: int = field(default=-1, name="External id")
    sequence_number: int = field(default=-1, name="Sequence number")
    device: int = -1
    device_id: int = field(default=-1, name="Device Id")  # [memory] events say "Device Id"
    # ROCm runtime events write the stream as a hex string ("0x0").
    stream: int | str = -1
    # Triton's cuda_driver launch writes the grid as a string; kernels write [x, y, z].
    grid: list[int] | str | None = None
    block: list[int] | None = None
    registers_per_thread: int = field(default=-1, name="registers per thread")
    shared_memory: int = field(default=-1, name="shared memory")
    blocks_per_sm: float = field(default=NAN, name="blocks per SM")
    warps_per_sm: float = field(default=NAN, name="warps per SM")
    occupancy: float = field(default=NAN, name="est. achieved occupancy %")
    # "Bytes" (profile_memory [memory] events) is signed: frees are negative.
    alloc_bytes: int | None = field(default=None, name="Bytes")
    # "bytes" is what gpu_memcpy / gpu_memset events carry.
    copy_bytes: int | None = field(default=None, name="bytes")
    total_allocated: int | None = field(default=None, name="Total Allocated")
    addr: int = field(default=-1, name="Addr")
    device_type: int = field(default=-1, name="Device Type")
    # Kept as raw JSON text and interned; analysis parses the few it needs.
    input_dims: msgspec.Raw = field(default=NO_RAW, name="Input Dims")
    input_types: msgspec.Raw = field(default=NO_RAW, name="Input type")
    # Only metadata ("M") events use these three.
    name: str | None = None
    labels: str | None = None
    sort_index: int | None = None


class Event(msgspec.Struct, gc=False):
    """One trace event as the fast path decodes it."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = -1
    tid: int | str = -1
    # Integer stamps stay ints: epoch-like µs values are exact as ints, not as float64.
    ts: int | float = NAN
    dur: float = NAN
    id: int | str = -1  # flow id of "s"/"f" events
    bp: str = ""  # flow binding point: "e" = enclosing slice
    args: Args | None = None


class LooseArgs(msgspec.Struct, gc=False):
    """:class:`Args` with every value untyped, for re-reading a batch that failed to type."""

    correlation: Any = None
    external_id: Any = field(default=None, name="External id")
    sequence_number: Any = field(default=None, name="Sequence number")
    device: Any = None
    device_id: Any = field(default=None, name="Device Id")
    stream: Any = None
    grid: Any = None
    block: Any = None
    registers_per_thread: Any = field(default=None, name="registers per thread")
    shared_memory: Any = field(default=None, name="shared memory")
    blocks_per_sm: Any = field(default=None, name="blocks per SM")
    warps_per_sm: Any = field(default=None, name="warps per SM")
    occupancy: Any = field(default=None, name="est. achieved occupancy %")
    alloc_bytes: Any = field(default=None, name="Bytes")
    copy_bytes: Any = field(default=None, name="bytes")
    total_allocated: Any = field(default=None, name="Total Allocated")
    addr: Any = field(default=None, name="Addr")
    device_type: Any = field(default=None, name="Device Type")
    input_dims: msgspec.Raw = field(default=NO_RAW, name="Input Dims")
    input_types: msgspec.Raw = field(default=NO_RAW, name="Input type")
    name: Any = None
    labels: Any = None
    sort_index: Any = None


class LooseEvent(msgspec.Struct, gc=False):
    """:class:`Event` with every value untyped; ``args`` may be any JSON value."""

    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: msgspec.Raw = NO_RAW
    # Raw too: a value out of float range (1e999) must not make the whole event unreadable.
    dur: msgspec.Raw = NO_RAW
    id: Any = None
    bp: Any = None
    args: LooseArgs | list[Any] | str | float | int | bool | None = None


class RawTs(msgspec.Struct, gc=False):
    """Just the timestamp, as written, for batches whose float ``ts`` would lose digits."""

    ts: msgspec.Raw = NO_RAW


# ---- loose -> typed ------------------------------------------------------------------
# A value of the wrong JSON type becomes the field's "absent" default: the event keeps its
# other fields, and analysis sees a missing value rather than a crash.

_INT64 = (-(2**63), 2**63 - 1)


def _opt_int(value: Any) -> int | None:
    if type(value) is int and _INT64[0] <= value <= _INT64[1]:  # not bool
        return value
    return None


def _int(value: Any) -> int:
    v = _opt_int(value)
    return -1 if v is None else v


def _float(value: Any) -> float:
    if type(value) is float:
        return value
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            return NAN
    return NAN


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _opt_text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _ints_list(value: Any) -> list[int] | None:
    """A grid/block list with every non-int entry made -1; None if not a list."""
    return [_int(v) for v in value] if isinstance(value, list) else None


def _id(value: Any) -> int | str:
    return value if isinstance(value, str) else _int(value)


def _raw_float(raw: msgspec.Raw) -> float:
    """A JSON number's value; nan for anything else (strings, null, true, lists)."""
    try:
        value = float(bytes(raw))
    except (ValueError, OverflowError):
        return NAN
    return value if math.isfinite(value) else NAN  # float() reads "1e999" as inf


def to_event(loose: LooseEvent) -> Event:
    """The typed :class:`Event` for a loosely decoded one, wrong-typed values made absent."""
    a = loose.args
    args = None
    if isinstance(a, LooseArgs):
        args = Args(
            correlation=_int(a.correlation),
            external_id=_int(a.external_id),
            sequence_number=_int(a.sequence_number),
            device=_int(a.device),
            device_id=_int(a.device_id),
            stream=_id(a.stream),
            grid=_ints_list(a.grid),
            block=_ints_list(a.block),
            registers_per_thread=_int(a.registers_per_thread),
            shared_memory=_int(a.shared_memory),
            blocks_per_sm=_float(a.blocks_per_sm),
            warps_per_sm=_float(a.warps_per_sm),
            occupancy=_float(a.occupancy),
            alloc_bytes=_opt_int(a.alloc_bytes),
            copy_bytes=_opt_int(a.copy_bytes),
            total_allocated=_opt_int(a.total_allocated),
            addr=_int(a.addr),
            device_type=_int(a.device_type),
            input_dims=a.input_dims,
            input_types=a.input_types,
            name=_opt_text(a.name),
            labels=_opt_text(a.labels),
            sort_index=_opt_int(a.sort_index),
        )
    return Event(
        ph=_text(loose.ph),
        cat=_text(loose.cat),
        name=_text(loose.name),
        pid=_id(loose.pid),
        tid=_id(loose.tid),
        ts=_raw_float(loose.ts),
        dur=_raw_float(loose.dur),
        id=_id(loose.id),
        bp=_text(loose.bp),
        args=args,
    )
