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
  batch (or an int beyond int64, a byte count beyond :data:`MAX_BYTES`) makes msgspec
  reject the whole batch.
* :class:`LooseEvent`/:class:`LooseArgs`, the same keys typed ``Any`` (or :class:`msgspec.Raw`),
  used only to re-read such a batch event by event, so that one odd event degrades one row
  instead of the whole trace (:func:`to_event`: each odd value made absent, and counted).
  ``ts`` and ``dur`` are kept raw there: ``ts`` to be read exactly, and so that a value out
  of float range does not make the whole event unreadable.

The structs use ``gc=False``: they hold only strings, numbers and lists of numbers, so they
cannot form reference cycles, and keeping hundreds of thousands of them out of the cyclic
garbage collector more than halves decoding time.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import msgspec
from msgspec import field

__all__ = ["HEADER_KEYS", "MAX_BYTES", "NO_RAW", "UNUSABLE", "Args", "Event", "LooseArgs",
           "LooseEvent", "RawTs", "loose_by_field", "to_event"]

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


#: Byte counts at or beyond this are not exact in float64, and no allocation is that large.
MAX_BYTES = 2**53
_INT64 = (-(2**63), 2**63 - 1)
# The typed structs accept only what the loose reading (to_event) keeps unchanged: an int
# beyond int64, or a byte count beyond MAX_BYTES, fails the batch's typing, and to_event
# then makes it absent and counts it, the same way whatever else the batch holds.
Int = Annotated[int, msgspec.Meta(ge=_INT64[0], le=_INT64[1])]
ByteCount = Annotated[int, msgspec.Meta(gt=-MAX_BYTES, lt=MAX_BYTES)]


class Args(msgspec.Struct, gc=False):
    """The ``args`` keys attnprof reads, typed for the fast path."""

    correlation: Int = -1
    external_id: Int = field(default=-1, name="External id")
    sequence_number: Int = field(default=-1, name="Sequence number")
    device: Int = -1
    device_id: Int = field(default=-1, name="Device Id")  # [memory] events say "Device Id"
    # ROCm runtime events write the stream as a hex string ("0x0").
    stream: Int | str = -1
    # Triton's cuda_driver launch writes the grid as a string; kernels write [x, y, z].
    grid: list[Int] | str | None = None
    block: list[Int] | None = None
    registers_per_thread: Int = field(default=-1, name="registers per thread")
    shared_memory: Int = field(default=-1, name="shared memory")
    blocks_per_sm: float = field(default=NAN, name="blocks per SM")
    warps_per_sm: float = field(default=NAN, name="warps per SM")
    occupancy: float = field(default=NAN, name="est. achieved occupancy %")
    # "Bytes" (profile_memory [memory] events) is signed: frees are negative.
    alloc_bytes: ByteCount | None = field(default=None, name="Bytes")
    # "bytes" is what gpu_memcpy / gpu_memset events carry.
    copy_bytes: ByteCount | None = field(default=None, name="bytes")
    total_allocated: ByteCount | None = field(default=None, name="Total Allocated")
    addr: Int = field(default=-1, name="Addr")
    device_type: Int = field(default=-1, name="Device Type")
    # Kept as raw JSON text and interned; analysis parses the few it needs.
    input_dims: msgspec.Raw = field(default=NO_RAW, name="Input Dims")
    input_types: msgspec.Raw = field(default=NO_RAW, name="Input type")
    # Only metadata ("M") events use these three.
    name: str | None = None
    labels: str | None = None
    sort_index: Int | None = None


class Event(msgspec.Struct, gc=False):
    """One trace event as the fast path decodes it."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: Int | str = -1
    tid: Int | str = -1
    # Integer stamps stay ints: epoch-like µs values are exact as ints, not as float64 (and
    # any int is a stamp: beyond float range it reads as "ts not a number", either way).
    ts: int | float = NAN
    dur: float = NAN
    id: Int | str = -1  # flow id of "s"/"f" events
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


class _Unusable:
    """A value msgspec cannot hold even untyped (a number beyond float range): written, but
    unusable, as a wrong-typed value is."""

    def __repr__(self) -> str:
        return "UNUSABLE"


UNUSABLE = _Unusable()


def _all_raw(cls: Any) -> Any:
    """A struct of ``cls``'s fields, same JSON names, each kept as written (``Raw``): decoding
    it skips unknown keys unread, as ``cls`` does, and decodes no value."""
    fields = [(name, msgspec.Raw, NO_RAW) for name in cls.__struct_fields__]
    names = dict(zip(cls.__struct_fields__, cls.__struct_encode_fields__, strict=True))
    return msgspec.defstruct(f"Raw{cls.__name__}", fields, rename=names, gc=False)


_RAW_EVENT = msgspec.json.Decoder(_all_raw(LooseEvent))
_RAW_ARGS = msgspec.json.Decoder(_all_raw(LooseArgs))


def loose_by_field(raw: bytes) -> LooseEvent | None:
    """:class:`LooseEvent` of an entry whose loose decoding failed, read one field at a
    time: a value beyond what msgspec decodes (``"pid": 1e999``) becomes :data:`UNUSABLE`
    instead of making the whole event unreadable. None when the entry is not an object;
    text that is not UTF-8 in a field raises :class:`msgspec.DecodeError`, as there."""
    try:
        fields = _RAW_EVENT.decode(raw)
    except msgspec.ValidationError:
        return None
    event = _fill(LooseEvent(), fields, ("ts", "dur", "args"))
    if fields.args is not NO_RAW:
        if bytes(fields.args)[:1] == b"{":
            event.args = _fill(LooseArgs(), _RAW_ARGS.decode(fields.args),
                               ("input_dims", "input_types"))
        else:
            event.args = _value(fields.args)
    return event


def _fill(out: Any, fields: Any, keep: tuple[str, ...]) -> Any:
    """``out`` with each field written in ``fields`` decoded on its own (those in ``keep``
    kept as written)."""
    for name in out.__struct_fields__:
        value = getattr(fields, name)
        if value is not NO_RAW and name != "args":
            setattr(out, name, value if name in keep else _value(value))
    return out


def _value(raw: msgspec.Raw) -> Any:
    try:
        return msgspec.json.decode(raw)
    except msgspec.ValidationError:  # a number beyond float range (not UTF-8: raised)
        return UNUSABLE


class RawTs(msgspec.Struct, gc=False):
    """Just the timestamp, as written, for batches whose float ``ts`` would lose digits."""

    ts: msgspec.Raw = NO_RAW


# ---- loose -> typed ------------------------------------------------------------------
# A value of the wrong JSON type becomes the field's "absent" default: the event keeps its
# other fields, and analysis sees a missing value rather than a crash. Each such value (a
# written value, not null, made absent) is named in ``unusable``, so the loader can count
# it. The typed structs refuse exactly these values (see Int and ByteCount), so an event
# reads, and counts, alike in any batch.

def _usable_int(value: Any) -> bool:
    return type(value) is int and _INT64[0] <= value <= _INT64[1]  # not bool


def _usable_float(value: Any) -> bool:
    if type(value) is float:
        return True
    if type(value) is not int:
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


class _Reader:
    """Converts one loose event's values, noting the written ones that are unusable."""

    def __init__(self, unusable: list[str]) -> None:
        self.unusable = unusable

    def _note(self, value: Any, ok: bool, name: str) -> bool:
        if not ok and value is not None:
            self.unusable.append(name)
        return ok

    def int64(self, value: Any, name: str) -> int:
        return value if self._note(value, _usable_int(value), name) else -1

    def opt_int64(self, value: Any, name: str) -> int | None:
        return value if self._note(value, _usable_int(value), name) else None

    def nbytes(self, value: Any, name: str) -> int | None:
        """A byte count: an int of magnitude below :data:`MAX_BYTES`."""
        ok = _usable_int(value) and abs(value) < MAX_BYTES
        return value if self._note(value, ok, name) else None

    def real(self, value: Any, name: str) -> float:
        return float(value) if self._note(value, _usable_float(value), name) else NAN

    def text(self, value: Any, name: str) -> str:
        return value if self._note(value, isinstance(value, str), name) else ""

    def opt_text(self, value: Any, name: str) -> str | None:
        return value if self._note(value, isinstance(value, str), name) else None

    def id(self, value: Any, name: str) -> int | str:
        return value if isinstance(value, str) else self.int64(value, name)

    def ints_list(self, value: Any, name: str) -> list[int] | None:
        """A grid/block list with every unusable entry made -1; None if not a list."""
        if not self._note(value, isinstance(value, list), name):
            return None
        if not all(map(_usable_int, value)):
            self.unusable.append(name)
        return [v if _usable_int(v) else -1 for v in value]

    def grid(self, value: Any) -> list[int] | str | None:
        # Triton's cuda_driver launch writes the grid as a string: a value, as typed.
        return value if isinstance(value, str) else self.ints_list(value, "args.grid")


def _raw_float(raw: msgspec.Raw) -> float:
    """A JSON number's value; nan for anything else (strings, null, true, lists)."""
    try:
        value = float(bytes(raw))
    except (ValueError, OverflowError):
        return NAN
    return value if math.isfinite(value) else NAN  # float() reads "1e999" as inf


def to_event(loose: LooseEvent, unusable: list[str] | None = None) -> Event:
    """The typed :class:`Event` for a loosely decoded one, wrong-typed values made absent
    (and named in ``unusable``; ``ts`` and ``dur`` are counted as skipped events instead)."""
    r = _Reader(unusable if unusable is not None else [])
    a = loose.args
    args = None
    if isinstance(a, LooseArgs):
        args = Args(
            correlation=r.int64(a.correlation, "args.correlation"),
            external_id=r.int64(a.external_id, "args.External id"),
            sequence_number=r.int64(a.sequence_number, "args.Sequence number"),
            device=r.int64(a.device, "args.device"),
            device_id=r.int64(a.device_id, "args.Device Id"),
            stream=r.id(a.stream, "args.stream"),
            grid=r.grid(a.grid),
            block=r.ints_list(a.block, "args.block"),
            registers_per_thread=r.int64(a.registers_per_thread, "args.registers per thread"),
            shared_memory=r.int64(a.shared_memory, "args.shared memory"),
            blocks_per_sm=r.real(a.blocks_per_sm, "args.blocks per SM"),
            warps_per_sm=r.real(a.warps_per_sm, "args.warps per SM"),
            occupancy=r.real(a.occupancy, "args.est. achieved occupancy %"),
            alloc_bytes=r.nbytes(a.alloc_bytes, "args.Bytes"),
            copy_bytes=r.nbytes(a.copy_bytes, "args.bytes"),
            total_allocated=r.nbytes(a.total_allocated, "args.Total Allocated"),
            addr=r.int64(a.addr, "args.Addr"),
            device_type=r.int64(a.device_type, "args.Device Type"),
            input_dims=a.input_dims,
            input_types=a.input_types,
            name=r.opt_text(a.name, "args.name"),
            labels=r.opt_text(a.labels, "args.labels"),
            sort_index=r.opt_int64(a.sort_index, "args.sort_index"),
        )
    elif a is not None:
        r.unusable.append("args")
    return Event(
        ph=r.text(loose.ph, "ph"),
        cat=r.text(loose.cat, "cat"),
        name=r.text(loose.name, "name"),
        pid=r.id(loose.pid, "pid"),
        tid=r.id(loose.tid, "tid"),
        ts=_raw_float(loose.ts),
        dur=_raw_float(loose.dur),
        id=r.id(loose.id, "id"),
        bp=r.text(loose.bp, "bp"),
        args=args,
    )
