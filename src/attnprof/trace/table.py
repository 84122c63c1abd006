"""The columnar event table a loaded trace becomes, and the trace's metadata.

One row per trace event (``"M"`` metadata events live in :class:`TraceMeta`), one numpy
array per column, repeated strings interned in :class:`StringTable`. Every column's dtype,
unit and absent-value sentinel, and how timestamps keep nanoseconds, are in
``docs/trace-table.md``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import msgspec
import numpy as np

__all__ = [
    "MEMORY_CPU",
    "MEMORY_CUDA",
    "ROW_COLUMNS",
    "DistributedInfo",
    "EventTable",
    "KernelLaunches",
    "MemoryRecords",
    "StringTable",
    "Trace",
    "TraceMeta",
]

# Per-row columns, in declaration order; ``EventTable.where`` filters exactly these.
ROW_COLUMNS = (
    "ph", "cat", "name", "pid", "tid", "ts", "dur", "correlation", "external_id", "flow_id",
    "flow_bp", "device", "stream", "sequence_number", "input_dims", "input_types", "launch",
    "memory",
)  # fmt: skip


def member(column: np.ndarray, values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """``np.isin(column, values)``, faster for what the masks ask: a few values (a phase, a
    category) compare directly; more ids look up a table as long as the column's ids."""
    if len(values) <= 4:
        out = np.zeros(len(column), dtype=bool)
        for v in values:
            out |= column == v
        return out
    if column.dtype.kind == "i" and column.dtype.itemsize <= 2:
        ids = np.asarray(values, dtype=np.int64)
        lo = int(np.iinfo(column.dtype).min)
        table = np.zeros(int(np.iinfo(column.dtype).max) - lo + 1, dtype=bool)
        table[ids[(ids >= lo) & (ids <= -lo - 1)] - lo] = True
        return table[column.astype(np.intp) - lo]
    return np.isin(column, values)


class StringTable(msgspec.Struct, frozen=True, dict=True):
    """Interned strings; id ``i`` is ``values[i]``, sorted so ids do not depend on read order."""

    values: tuple[str, ...]

    @cached_property
    def _index(self) -> dict[str, int]:
        return {s: i for i, s in enumerate(self.values)}

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, sid: int) -> str:
        """The string for id ``sid``; ``""`` for the absent id -1."""
        return self.values[sid] if sid >= 0 else ""

    def id_of(self, text: str) -> int:
        """The id of ``text``, or -1 when the trace never uses it."""
        return self._index.get(text, -1)

    def ids_matching(self, pattern: str | re.Pattern[str]) -> np.ndarray:
        """Ids of the strings that the regular expression ``pattern`` matches (``re.search``)."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        return np.array([i for i, s in enumerate(self.values) if rx.search(s)], dtype=np.int32)


# numpy columns: compare them explicitly
class KernelLaunches(msgspec.Struct, frozen=True, eq=False):
    """Distinct kernel launch configurations; many launches share one row.

    ``grid``/``block`` are ``(m, 3)`` int64 (-1 absent), ``registers_per_thread`` and
    ``shared_memory`` (bytes per block) int64 (-1), ``blocks_per_sm``, ``warps_per_sm`` and
    ``occupancy`` (CUPTI's "est. achieved occupancy %", 0-100) float64 (nan).
    """

    grid: np.ndarray
    block: np.ndarray
    registers_per_thread: np.ndarray
    shared_memory: np.ndarray
    blocks_per_sm: np.ndarray
    warps_per_sm: np.ndarray
    occupancy: np.ndarray


# numpy columns: compare them explicitly
class MemoryRecords(msgspec.Struct, frozen=True, eq=False):
    """Byte counts of allocation events and device copies/sets, one row per such event.

    ``bytes`` is float64 so that frees (negative ``Bytes`` of [memory] events) and absence
    (nan) both fit; it is exact below 2**53. ``total_allocated`` float64 (nan), ``addr`` int64
    (-1), ``device_type`` int8, as torch writes it: 0 CPU, 1 CUDA, ... (-1).
    """

    bytes: np.ndarray
    total_allocated: np.ndarray
    addr: np.ndarray
    device_type: np.ndarray


#: ``MemoryRecords.device_type`` of host and CUDA allocations.
MEMORY_CPU, MEMORY_CUDA = 0, 1


def _gather(rows: np.ndarray, values: np.ndarray, fill: float) -> np.ndarray:
    """``values[rows]`` with ``fill`` where ``rows`` is -1."""
    out = np.full((len(rows), *values.shape[1:]), fill, dtype=values.dtype)
    ok = rows >= 0
    out[ok] = values[rows[ok]]
    return out


# numpy columns: compare them explicitly
class EventTable(msgspec.Struct, frozen=True, eq=False, dict=True):
    """Equal-length numpy columns, one row per event; see the module doc for each column."""

    ph: np.ndarray
    cat: np.ndarray
    name: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    correlation: np.ndarray
    external_id: np.ndarray
    flow_id: np.ndarray
    flow_bp: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    sequence_number: np.ndarray
    input_dims: np.ndarray
    input_types: np.ndarray
    launch: np.ndarray
    memory: np.ndarray
    strings: StringTable
    launches: KernelLaunches
    memory_records: MemoryRecords

    def __post_init__(self) -> None:
        n = len(self.ph)
        bad = [c for c in ROW_COLUMNS if len(getattr(self, c)) != n]
        if bad:
            raise ValueError(f"EventTable columns {bad} do not have {n} rows")

    def __len__(self) -> int:
        return len(self.ph)

    def where(self, mask: np.ndarray) -> EventTable:
        """The rows selected by ``mask`` (a boolean mask or integer row indices).

        Side tables and strings are shared, not copied.
        """
        cols = {c: getattr(self, c)[mask] for c in ROW_COLUMNS}
        return EventTable(
            **cols, strings=self.strings, launches=self.launches, memory_records=self.memory_records
        )

    def mask_ph(self, *phases: str) -> np.ndarray:
        """Rows whose phase is one of ``phases`` (e.g. ``"X"``)."""
        return member(self.ph, [p.encode() for p in phases])

    def mask_timed(self) -> np.ndarray:
        """Rows that can be placed in time: a finite ``ts`` and, for complete (``"X"``)
        events, a finite, non-negative ``dur``. The analysis leaves the others out and
        ``TraceMeta.skipped_events`` counts them, by reason. (Computed once; read-only.)"""
        return self._timed

    @cached_property
    def _timed(self) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            timed = np.isfinite(self.ts) & ((self.ph != b"X") | (self.dur >= 0))
        timed.flags.writeable = False
        return timed

    def mask_cat(self, *categories: str) -> np.ndarray:
        """Rows whose category is exactly one of ``categories`` (e.g. ``"kernel"``).

        A category the trace never uses matches no row (its id would be -1, the id of rows
        that have no category at all).
        """
        return member(self.cat, self._ids(categories))

    def mask_named(self, *names: str) -> np.ndarray:
        """Rows whose name is exactly one of ``names`` (absent names match nothing)."""
        return member(self.name, self._ids(names))

    def _ids(self, texts: tuple[str, ...]) -> list[int]:
        return [i for i in (self.strings.id_of(x) for x in texts) if i >= 0]

    def mask_name(self, pattern: str | re.Pattern[str]) -> np.ndarray:
        """Rows whose name matches the regular expression ``pattern`` (``re.search``)."""
        return member(self.name, self.strings.ids_matching(pattern))

    def names(self) -> list[str]:
        """The name of every row, as strings (small tables; columns stay ids)."""
        return [self.strings[i] for i in self.name.tolist()]

    # Launch details and byte counts, gathered from the side tables into full columns.
    @property
    def grid(self) -> np.ndarray:
        """``(n, 3)`` int64 grid size of kernel launches (-1)."""
        return _gather(self.launch, self.launches.grid, -1)

    @property
    def block(self) -> np.ndarray:
        """``(n, 3)`` int64 block size of kernel launches (-1)."""
        return _gather(self.launch, self.launches.block, -1)

    @property
    def registers_per_thread(self) -> np.ndarray:
        """int64 registers per thread (-1)."""
        return _gather(self.launch, self.launches.registers_per_thread, -1)

    @property
    def shared_memory(self) -> np.ndarray:
        """int64 shared memory per block, bytes (-1)."""
        return _gather(self.launch, self.launches.shared_memory, -1)

    @property
    def blocks_per_sm(self) -> np.ndarray:
        """float64 blocks per SM (nan)."""
        return _gather(self.launch, self.launches.blocks_per_sm, np.nan)

    @property
    def warps_per_sm(self) -> np.ndarray:
        """float64 warps per SM (nan)."""
        return _gather(self.launch, self.launches.warps_per_sm, np.nan)

    @property
    def occupancy(self) -> np.ndarray:
        """float64 estimated achieved occupancy, percent (nan)."""
        return _gather(self.launch, self.launches.occupancy, np.nan)

    @property
    def bytes(self) -> np.ndarray:
        """float64 bytes: [memory] ``Bytes`` (negative = free) or copy/set size (nan)."""
        return _gather(self.memory, self.memory_records.bytes, np.nan)

    @property
    def total_allocated(self) -> np.ndarray:
        """float64 bytes allocated after a [memory] event (nan)."""
        return _gather(self.memory, self.memory_records.total_allocated, np.nan)

    @property
    def addr(self) -> np.ndarray:
        """int64 address of a [memory] event (-1)."""
        return _gather(self.memory, self.memory_records.addr, -1)

    @property
    def device_type(self) -> np.ndarray:
        """int8 device type of a [memory] event: 0 CPU, 1 CUDA, ... (-1)."""
        return _gather(self.memory, self.memory_records.device_type, -1)


class DistributedInfo(msgspec.Struct, frozen=True):
    """The trace's ``distributedInfo``; any part may be missing (None)."""

    rank: int | None
    world_size: int | None
    backend: str | None


class TraceMeta(msgspec.Struct, frozen=True):
    """Everything in a trace that is not an event row.

    Dicts are keyed by the table's ``pid`` (and ``tid``) values and are meant to be read only.
    """

    source: str
    n_events: int
    # Entries of traceEvents that were not usable events (sum of dropped_entries).
    n_dropped: int
    ts_origin_us: int
    # Entries that are not rows, by reason: "not an object", "no phase (ph)", "in a second
    # traceEvents list" (such a list is not read: its entries are counted here).
    dropped_entries: dict[str, int] = msgspec.field(default_factory=dict)
    # Values written in events but unusable (a wrong type, an int beyond int64, a byte count
    # beyond 2**53), held as absent, by field ("args.Bytes", "pid", ...); ts and dur are
    # counted in skipped_events instead.
    unusable_values: dict[str, int] = msgspec.field(default_factory=dict)
    # Rows the analysis leaves out because they cannot be placed in time, by reason:
    # "missing ts", "ts not a number", and for complete ("X") events "missing dur",
    # "dur not a number", "negative dur". They stay in the table (and in n_events).
    skipped_events: dict[str, int] = msgspec.field(default_factory=dict)
    schema_version: int | None = None
    trace_name: str | None = None
    display_time_unit: str | None = None
    base_time_ns: int | None = None
    device_properties: tuple[dict[str, Any], ...] = ()
    distributed: DistributedInfo | None = None
    process_names: dict[int, str] = msgspec.field(default_factory=dict)
    process_labels: dict[int, str] = msgspec.field(default_factory=dict)
    process_sort_index: dict[int, int] = msgspec.field(default_factory=dict)
    thread_names: dict[tuple[int, int], str] = msgspec.field(default_factory=dict)
    thread_sort_index: dict[tuple[int, int], int] = msgspec.field(default_factory=dict)
    # Negative pid/tid values standing for string ids ("Spans", "Traces", ...).
    id_labels: dict[int, str] = msgspec.field(default_factory=dict)
    # The "attnprof" header block of traces attnprof captured itself; None for others.
    attnprof: dict[str, Any] | None = None
    # Whether the kernel launch configurations and memory records were read (see
    # ``load_trace(side_tables=False)``): without them ``launch`` and ``memory`` are -1
    # and ``launches`` and ``memory_records`` empty.
    side_tables: bool = True


# numpy columns: compare them explicitly
class Trace(msgspec.Struct, frozen=True, eq=False):
    """A loaded trace: the event table plus its metadata."""

    events: EventTable
    meta: TraceMeta
