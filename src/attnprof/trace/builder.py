"""Turn decoded event batches into the columns of one :class:`EventTable`.

The loader feeds batches in file order, decoded by msgspec (:meth:`TableBuilder.add`) or
read by the C scanner (:meth:`~attnprof.trace.scanned_batches.ScannedBatches.add_records`);
:class:`TableBuilder` converts each to numpy at once (so a batch's objects can be freed) and
appends it to growing columns (:class:`~attnprof.trace.columns.Column`), narrowed as they
go so that the table is never held wider than it ends up. Everything it assigns is
independent of how the file was cut into batches, so any ``chunk_bytes`` gives an
identical table:

* string ids are renumbered in sorted string order at the end;
* string pids/tids get negative ids in order of first appearance (pid before tid);
* the timestamp origin is the first finite ``ts`` in the file, shifted at the end to the
  floor of the earliest one, and each ``ts`` is converted on its own (never batch-wise).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import add, is_not, ne
from typing import Any

import msgspec
import numpy as np

from attnprof.trace.columns import (
    Column,
    absent,
    as_float,
    char_code,
    dims,
    exact_ts,
    float_column,
    i64,
    id_column,
    int_column,
    ints_minus,
    narrow,
)
from attnprof.trace.scan import F_TS_INT, TEXT_EXACT_ABOVE, TokenIds
from attnprof.trace.scanned_batches import ScannedBatches
from attnprof.trace.schema import Args, Event
from attnprof.trace.table import (
    ROW_COLUMNS,
    EventTable,
    KernelLaunches,
    MemoryRecords,
    StringTable,
)

__all__ = ["TableBuilder"]

_NO_ARGS = Args()
# Beyond 2**40 µs (~13 days) a float64 µs value is coarser than ~0.1 ns, so such timestamps
# are taken relative to the origin before rounding: as ints, or from the raw text.
_EXACT_TS_ABOVE = float(2**40)
# Integer stamps within this bound are subtracted from the origin in int64 without overflow.
_INT_TS_LIMIT = 2**62
_STRING_COLUMNS = ("cat", "name", "input_dims", "input_types")


class TableBuilder(ScannedBatches):
    """Accumulates event batches; :meth:`finish` returns the table and its ts origin."""

    def __init__(self, tokens: list[bytes] | None = None, *, side_tables: bool = True) -> None:
        """``tokens``: the token list of the scanner whose batches :meth:`add_records` takes.
        ``side_tables``: read the kernel launch configurations and memory records (else the
        ``launch`` and ``memory`` columns are absent, -1, and their tables empty)."""
        self.side_tables = side_tables
        self._ids: dict[str, int] = {"": -1}
        self._raw_ids: dict[bytes, int] = {b"": -1}
        self._strs: list[str] = []
        self._labels: dict[str, int] = {}
        self._char_ids: dict[str, int] = {}
        self._char_lut: list[bytes] = []
        self._char_array = np.array(self._char_lut, dtype="S1")
        self._launch_ids: dict[tuple[Any, ...], int] = {}
        self._cols = {c: Column(_EMPTY_DTYPES.get(c, np.int8)) for c in ROW_COLUMNS}
        # The MemoryRecords columns: bytes, total_allocated, addr, device_type.
        self._mem = tuple(Column(d) for d in (np.float64, np.float64, np.int64, np.int8))
        self._origin: int | None = None
        self.n_no_phase = 0  # entries without "ph": not trace events, dropped
        #: Rows the analysis cannot place in time, by reason (see _count_skipped).
        self.skipped_events: dict[str, int] = {}
        #: Values written but unusable, made absent, by field (see schema.to_event).
        self.unusable_values: dict[str, int] = {}
        self.process_names: dict[int, str] = {}
        self.process_labels: dict[int, str] = {}
        self.process_sort_index: dict[int, int] = {}
        self.thread_names: dict[tuple[int, int], str] = {}
        self.thread_sort_index: dict[tuple[int, int], int] = {}
        self._token_ids = TokenIds(tokens if tokens is not None else [])

    # ---- per batch -------------------------------------------------------------------
    def add(
        self,
        events: list[Event],
        raw_ts: Callable[[], Sequence[msgspec.Raw]],
        written: tuple[list[bool], list[bool]] | None = None,
    ) -> None:
        """Append one batch, in file order; ``raw_ts()`` gives each event's ``ts`` as written.

        ``written`` says, for a batch read loosely, whether each event wrote a ``ts`` and a
        ``dur`` value at all (an unusable one reads as nan, like an absent one); a batch read
        with the typed structs cannot have written a non-number.
        """
        if not events:
            return
        phases = [e.ph for e in events]
        pid, tid = self._tracks(events)
        ts_values = [e.ts for e in events]
        ts = self._relative_ts(ts_values, raw_ts)
        if "M" in phases or "" in phases:
            # Metadata events describe tracks, not time: they go to TraceMeta. An entry
            # without a phase is not a trace event at all.
            is_meta = np.array([p == "M" for p in phases], dtype=bool)
            self._take_metadata(
                [e for e, m in zip(events, is_meta, strict=True) if m], pid[is_meta], tid[is_meta]
            )
            keep = np.array([p != "M" and p != "" for p in phases], dtype=bool)
            self.n_no_phase += phases.count("")
            events = [e for e, k in zip(events, keep, strict=True) if k]
            phases = [p for p, k in zip(phases, keep, strict=True) if k]
            ts_values = [v for v, k in zip(ts_values, keep, strict=True) if k]
            if written is not None:
                ts_written, dur_written = written
                written = ([w for w, k in zip(ts_written, keep, strict=True) if k],
                           [w for w, k in zip(dur_written, keep, strict=True) if k])
            pid, tid, ts = pid[keep], tid[keep], ts[keep]
            if not events:
                return
        n = len(events)
        # Only events with args pay for the args columns (a third of a GPU trace has none:
        # flow arrows); the others keep the absent value, as Args() would give them.
        all_args = [e.args for e in events]
        # (Structs are always true: compress and filter keep exactly the ones present.)
        at = np.fromiter(compress(range(n), all_args), dtype=np.intp)
        args: list[Args] = list(filter(None, all_args))
        # Kernel launches always carry "block"; allocations "Addr", copies and sets "bytes".
        launches = _present([a.block for a in args])
        memory = _memory_rows([a.addr for a in args], [a.copy_bytes for a in args])
        device = int_column([a.device for a in args])
        if memory:  # [memory] events say "Device Id" instead of "device"
            ids = int_column([args[k].device_id for k in memory])
            device = device.astype(np.result_type(device, ids))
            device[memory] = np.where(device[memory] == -1, ids, device[memory])
        codes = self._codes(phases)
        dur = np.fromiter([e.dur for e in events], dtype=np.float64, count=n)
        self._count_skipped(codes, ts, dur, ts_values, written)
        cols = {
            "ph": codes,
            "cat": self._intern([e.cat for e in events]),
            "name": self._intern([e.name for e in events]),
            "pid": narrow(pid),
            "tid": narrow(tid),
            "ts": ts,
            "dur": dur,
            "correlation": _spread(n, at, int_column([a.correlation for a in args])),
            "external_id": _spread(n, at, int_column([a.external_id for a in args])),
            "flow_id": id_column([e.id for e in events]),
            "flow_bp": self._codes([e.bp for e in events]),
            "device": _spread(n, at, device),
            "stream": _spread(n, at, id_column([a.stream for a in args])),
            "sequence_number": _spread(n, at, int_column([a.sequence_number for a in args])),
            "input_dims": _spread(n, at, self._intern_raw([a.input_dims for a in args])),
            "input_types": _spread(n, at, self._intern_raw([a.input_types for a in args])),
            "launch": _spread(n, at, narrow(self._launches(args, launches)))
                      if self.side_tables else absent(n),
            "memory": _spread(n, at, narrow(self._memory(args, memory)))
                      if self.side_tables else absent(n),
        }
        for column, values in cols.items():
            self._cols[column].append(values)

    def count_unusable(self, fields: list[str]) -> None:
        """Count the unusable values of one event read loosely (:func:`schema.to_event`)."""
        for name in fields:
            self.unusable_values[name] = self.unusable_values.get(name, 0) + 1

    def _scanned_ts(
        self, cols: dict[str, np.ndarray], raw_ts: Callable[[], Sequence[msgspec.Raw]]
    ) -> np.ndarray:
        """:meth:`_relative_ts` for scanned columns, in numpy: the same values, case by case
        (all ints; else floats, ints beyond 2**40 µs subtracted exactly, epoch-scale
        decimals below 2**43 rounded to the nanosecond, above it read from the text)."""
        is_int = (cols["flags"] & F_TS_INT) != 0
        if is_int.all():
            fast = self._int_ts(cols["ts_i"])
            if fast is not None:
                return fast
        ts = cols["ts_f"]  # an int's float64, as np.fromiter gives it
        finite = np.isfinite(ts)
        if self._origin is None:
            if not finite.any():
                return ts.copy()
            self._origin = math.floor(ts[np.argmax(finite)])
        origin = self._origin
        out = ts - origin
        big = np.flatnonzero(finite & (np.abs(ts) >= _EXACT_TS_ABOVE))
        if not big.size:
            return out
        ints, decimals = big[is_int[big]], big[~is_int[big]]
        if ints.size:
            if not -_INT_TS_LIMIT < origin < _INT_TS_LIMIT:  # (ints are below 10**18)
                out[ints] = ints_minus(cols["ts_i"][ints].tolist(), origin)
            else:
                out[ints] = (cols["ts_i"][ints] - origin).astype(np.float64)
        _epoch_decimals(out, ts, decimals, origin, raw_ts)
        return out

    def _intern_text(self, text: str) -> int:
        """The provisional id of one string (see :meth:`_intern`)."""
        found = self._ids.get(text)
        if found is None:
            found = self._ids[text] = len(self._strs)
            self._strs.append(text)
        return found

    def _raw_id(self, raw: bytes) -> int:
        """The provisional id of one raw JSON text, as :meth:`_intern_raw` assigns it."""
        found = self._raw_ids.get(raw)
        if found is None:
            found = self._raw_ids[raw] = self._intern_text(raw.decode("utf-8", "replace"))
        return found

    def _codes(self, texts: list[str]) -> np.ndarray:
        """One-character codes as an ``S1`` array (see :func:`char_code`)."""
        # What traces hold: one ASCII character, or nothing (flow_bp on non-flow rows).
        # Then the joined text is the codes of the non-empty rows, in order, and the
        # column is built in C; anything else goes through the lookup table.
        joined = "".join(texts)
        if joined.isascii():
            at = list(compress(range(len(texts)), texts))  # the non-empty rows
            if len(at) == len(joined):
                codes = np.frombuffer(joined.encode("ascii"), dtype="S1")
                if len(at) == len(texts):
                    return codes.copy()  # frombuffer's array is read-only
                out = np.zeros(len(texts), dtype="S1")  # b"": absent
                out[at] = codes
                return out
        return self._codes_by_table(texts)

    def _codes_by_table(self, texts: list[str]) -> np.ndarray:
        """:meth:`_codes` via small ids into a lookup table, for any texts."""
        ids = self._char_ids
        try:
            idx = np.fromiter(map(ids.__getitem__, texts), dtype=np.intp, count=len(texts))
        except KeyError:
            for t in set(texts).difference(ids):
                ids[t] = len(self._char_lut)
                self._char_lut.append(char_code(t))
            self._char_array = np.array(self._char_lut, dtype="S1")
            idx = np.fromiter(map(ids.__getitem__, texts), dtype=np.intp, count=len(texts))
        return self._char_array[idx]

    def _intern(self, values: list[str]) -> np.ndarray:
        """Provisional string ids (renumbered in :meth:`finish`), narrowed."""
        ids = self._ids
        try:  # after the first batches, every string is already known
            found = np.fromiter(map(ids.__getitem__, values), dtype=np.int32, count=len(values))
            return narrow(found)
        except KeyError:
            pass
        for s in dict.fromkeys(values):
            if s not in ids:
                ids[s] = len(self._strs)
                self._strs.append(s)
        return narrow(np.fromiter(map(ids.__getitem__, values), dtype=np.int32, count=len(values)))

    def _intern_raw(self, raws: list[msgspec.Raw]) -> np.ndarray:
        """String ids of raw JSON texts; NO_RAW (absent, ``b""``) is -1. Keyed by the bytes,
        so each distinct text is decoded to a string once."""
        # Only CPU ops recorded with shapes carry these: most rows (all, without
        # record_shapes) are absent, and an empty Raw is false, so C-level compress finds
        # the others without a Python step per row.
        at = list(compress(range(len(raws)), raws))
        out = np.full(len(raws), -1, dtype=np.int32)
        if not at:
            return narrow(out)
        keys = list(map(bytes, [raws[i] for i in at]))
        ids = self._raw_ids
        try:  # after the first batches, every text is already known
            out[at] = np.fromiter(map(ids.__getitem__, keys), dtype=np.int32, count=len(keys))
            return narrow(out)
        except KeyError:
            pass
        for k in dict.fromkeys(keys).keys() - ids.keys():
            ids[k] = int(self._intern([k.decode("utf-8", "replace")])[0])
        out[at] = np.fromiter(map(ids.__getitem__, keys), dtype=np.int32, count=len(keys))
        return narrow(out)

    def _tracks(self, events: list[Event]) -> tuple[np.ndarray, np.ndarray]:
        pids = [e.pid for e in events]
        tids = [e.tid for e in events]
        n = len(events)
        try:
            return np.fromiter(pids, np.int64, n), np.fromiter(tids, np.int64, n)
        except (OverflowError, TypeError, ValueError):
            pass
        # Walk in event order, pid before tid, so label ids do not depend on batching.
        for i in [i for i in range(n) if type(pids[i]) is not int or type(tids[i]) is not int]:
            pids[i] = self._track_id(pids[i])
            tids[i] = self._track_id(tids[i])
        return int_column(pids).astype(np.int64), int_column(tids).astype(np.int64)

    def _track_id(self, value: int | str) -> int:
        if type(value) is int:
            return i64(value)
        if not isinstance(value, str) or not value:
            return -1
        if value.isdigit() and value.isascii():
            return i64(int(value))
        if value not in self._labels:
            self._labels[value] = -2 - len(self._labels)
        return self._labels[value]

    def _count_skipped(
        self,
        codes: np.ndarray,
        ts: np.ndarray,
        dur: np.ndarray,
        ts_values: Sequence[int | float] | None,
        written: tuple[list[bool], list[bool]] | None,
    ) -> None:
        """Count the events the analysis cannot place in time, by why: a ``ts`` that is
        missing or not a number, or a complete event's ``dur`` that is missing, not a number
        or negative (each event once, its ``ts`` first)."""
        bad_ts = ~np.isfinite(ts)
        with np.errstate(invalid="ignore"):
            bad_dur = (codes == b"X") & ~bad_ts & ~(dur >= 0)
        if not (bad_ts.any() or bad_dur.any()):
            return
        skipped = self.skipped_events
        for i in np.flatnonzero(bad_ts).tolist():
            # Typed, only an integer beyond float range is a written non-number (and the C
            # scanner, ts_values None, reads no integer that large).
            if written is not None:
                given = written[0][i]
            else:
                given = ts_values is not None and type(ts_values[i]) is int
            reason = "ts not a number" if given else "missing ts"
            skipped[reason] = skipped.get(reason, 0) + 1
        for i in np.flatnonzero(bad_dur).tolist():
            if dur[i] < 0:
                reason = "negative dur"
            else:
                reason = "dur not a number" if written is not None and written[1][i] else (
                    "missing dur")
            skipped[reason] = skipped.get(reason, 0) + 1

    def _relative_ts(
        self, values: list[int | float], raw_ts: Callable[[], Sequence[msgspec.Raw]]
    ) -> np.ndarray:
        """µs since the origin; each value depends only on its own text, never on the batch."""
        if type(values[0]) is int:
            # Ints that all fit int64 become an int64 array in C; a float, or an int beyond
            # int64, gives another dtype, and the general path below decides.
            ints = np.array(values)
            if ints.dtype == np.int64:
                fast = self._int_ts(ints)
                if fast is not None:
                    return fast
        try:
            ts = np.fromiter(values, dtype=np.float64, count=len(values))
        except OverflowError:  # an int beyond float range: not a time
            ts = np.fromiter(map(as_float, values), dtype=np.float64, count=len(values))
        finite = np.isfinite(ts)
        if self._origin is None:
            if not finite.any():
                return ts
            self._origin = math.floor(ts[np.argmax(finite)])
        origin = self._origin
        out = ts - origin
        big = np.flatnonzero(finite & (np.abs(ts) >= _EXACT_TS_ABOVE))
        if big.size:
            # Epoch-like stamps: a float64 of the absolute value has lost digits, so the
            # origin is subtracted first, exactly.
            is_int = np.array([type(values[i]) is int for i in big.tolist()], dtype=bool)
            ints, decimals = big[is_int], big[~is_int]
            if ints.size:
                out[ints] = ints_minus([values[i] for i in ints.tolist()], origin)
            _epoch_decimals(out, ts, decimals, origin, raw_ts)
        return out

    def _int_ts(self, ints: np.ndarray) -> np.ndarray | None:
        """:meth:`_relative_ts` of a batch of integer stamps (what kineto writes), in numpy:
        the same values, exact ints subtracted before rounding. None when a value is too
        large for int64 arithmetic (then the general path decides)."""
        if not (int(ints.min()) > -_INT_TS_LIMIT and int(ints.max()) < _INT_TS_LIMIT):
            return None
        ts = ints.astype(np.float64)
        if self._origin is None:
            self._origin = math.floor(ts[0])
        origin = self._origin
        if not -_INT_TS_LIMIT < origin < _INT_TS_LIMIT:
            return None
        out = ts - origin
        big = np.abs(ts) >= _EXACT_TS_ABOVE
        out[big] = (ints[big] - origin).astype(np.float64)
        return out

    def _launches(self, args: list[Args], hits: list[int]) -> np.ndarray:
        """Row in the launch side table of each launch among ``args`` (-1 elsewhere)."""
        rows = np.full(len(args), -1, dtype=np.int32)
        if not hits:
            return rows
        sel = [args[i] for i in hits]
        grids, blocks = [a.grid for a in sel], [a.block for a in sel]
        # What kernels write, [x, y, z] lists, become tuples in C; anything else via _triple.
        triple: Callable[[Any], tuple[Any, ...]] = (
            tuple if _all_triples(grids) and _all_triples(blocks) else _triple)
        keys = zip(
            map(add, map(triple, grids), map(triple, blocks)),
            [a.registers_per_thread for a in sel],
            [a.shared_memory for a in sel],
            [a.blocks_per_sm for a in sel],
            [a.warps_per_sm for a in sel],
            [a.occupancy for a in sel],
            strict=True,
        )
        ids = self._launch_ids
        # A new configuration gets the next row: setdefault reads len(ids) before adding.
        rows[hits] = [ids.setdefault(key, len(ids)) for key in keys]
        return rows

    def _memory(self, args: list[Args], hits: list[int]) -> np.ndarray:
        rows = np.full(len(args), -1, dtype=np.int32)
        if hits:
            sel = [args[i] for i in hits]
            nbytes = [a.alloc_bytes if a.alloc_bytes is not None else a.copy_bytes for a in sel]
            nbytes_col, total_col, addr_col, kind_col = self._mem
            nbytes_col.append(float_column(nbytes))
            total_col.append(float_column([a.total_allocated for a in sel]))
            addr_col.append(int_column([a.addr for a in sel]).astype(np.int64))
            kind_col.append(int_column([a.device_type for a in sel]))
            n = nbytes_col.n
            rows[hits] = np.arange(n - len(hits), n, dtype=np.int32)
        return rows

    def _take_metadata(self, events: list[Event], pids: np.ndarray, tids: np.ndarray) -> None:
        for e, pid, tid in zip(events, pids.tolist(), tids.tolist(), strict=True):
            a = e.args or _NO_ARGS
            self._take_meta(e.name, pid, tid, a.name, a.labels, a.sort_index)

    def _take_meta(self, event: str, pid: int, tid: int, name: str | None,
                   labels: str | None, sort_index: int | None) -> None:
        """What one metadata event says about a track (``args`` values; None: absent)."""
        if event == "process_name" and name is not None:
            self.process_names[pid] = name
        elif event == "process_labels" and labels is not None:
            self.process_labels[pid] = labels
        elif event == "process_sort_index" and sort_index is not None:
            self.process_sort_index[pid] = sort_index
        elif event == "thread_name" and name is not None:
            self.thread_names[(pid, tid)] = name
        elif event == "thread_sort_index" and sort_index is not None:
            self.thread_sort_index[(pid, tid)] = sort_index

    # ---- at the end ------------------------------------------------------------------
    @property
    def id_labels(self) -> dict[int, str]:
        """Negative pid/tid ids and the strings they stand for."""
        return {v: k for k, v in self._labels.items()}

    def finish(self) -> tuple[EventTable, int]:
        """The table, and the integer µs origin its ``ts`` column is relative to."""
        order = sorted(range(len(self._strs)), key=self._strs.__getitem__)
        # remap[old] = new; the extra last slot maps the absent id -1 to itself.
        remap = np.empty(len(order) + 1, dtype=np.int32)
        remap[np.array(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int32)
        remap[-1] = -1
        remap = narrow(remap)  # remapped columns come out narrow, no int32 copy in between
        strings = StringTable(tuple(self._strs[i] for i in order))
        cols: dict[str, np.ndarray] = {}
        for c in ROW_COLUMNS:
            col = self._cols.pop(c).array()
            cols[c] = narrow(remap[col]) if c in _STRING_COLUMNS else col
        origin = self._origin or 0
        ts = cols["ts"]
        # fmin skips nan without copying: the column can be most of the memory in use.
        earliest = float(np.fmin.reduce(ts)) if ts.size else math.nan
        if math.isfinite(earliest):
            shift = math.floor(earliest)
            ts -= shift
            origin += shift
        table = EventTable(
            **cols, strings=strings, launches=self._launch_table(), memory_records=self._mem_table()
        )
        return table, origin

    def _launch_table(self) -> KernelLaunches:
        keys = list(self._launch_ids)  # few: one per distinct launch configuration
        ints = np.array([[i64(v) for v in k[0] + k[1:3]] for k in keys], dtype=np.int64).reshape(
            -1, 8
        )
        floats = np.array([k[3:] for k in keys], dtype=np.float64).reshape(-1, 3)
        return KernelLaunches(
            grid=ints[:, 0:3].copy(),
            block=ints[:, 3:6].copy(),
            registers_per_thread=ints[:, 6].copy(),
            shared_memory=ints[:, 7].copy(),
            blocks_per_sm=floats[:, 0].copy(),
            warps_per_sm=floats[:, 1].copy(),
            occupancy=floats[:, 2].copy(),
        )

    def _mem_table(self) -> MemoryRecords:
        nbytes, total, addr, kind = (c.array() for c in self._mem)
        return MemoryRecords(bytes=nbytes, total_allocated=total, addr=addr, device_type=kind)


def _epoch_decimals(
    out: np.ndarray,
    ts: np.ndarray,
    decimals: np.ndarray,
    origin: int,
    raw_ts: Callable[[], Sequence[msgspec.Raw]],
) -> None:
    """``out[decimals]``: epoch-scale stamps written with decimals, relative to ``origin``.

    Below 2**43 µs a float64 is within half a nanosecond of the text, so rounding its
    fraction to whole ns gives back kineto's three decimals exactly; above, only the text
    itself does (e.g. the V100 "ns resolution" trace at 1.7e15).
    """
    near = decimals[np.abs(ts[decimals]) < TEXT_EXACT_ABOVE]
    whole = np.floor(ts[near])
    out[near] = (whole - origin) + np.round((ts[near] - whole) * 1000.0) / 1000.0
    far = decimals[np.abs(ts[decimals]) >= TEXT_EXACT_ABOVE]
    if far.size:
        raws = raw_ts()
        out[far] = [exact_ts(raws[i], origin) for i in far.tolist()]


def _triple(value: Any) -> tuple[Any, ...]:
    """A grid or block as a 3-tuple (what a kernel writes), else via :func:`dims`."""
    return tuple(value) if type(value) is list and len(value) == 3 else dims(value)


def _all_triples(values: list[Any]) -> bool:
    """Whether every value is a list of three (ints, as the typed structs decode them)."""
    return set(map(type, values)) == {list} and set(map(len, values)) == {3}


def _memory_rows(addrs: list[int], copy_bytes: list[int | None]) -> list[int]:
    """Positions of the memory records: allocations (an ``Addr``), copies and sets (``bytes``)."""
    try:  # one numpy comparison instead of a Python one per row
        allocs = np.flatnonzero(np.fromiter(addrs, np.int64, len(addrs)) != -1).tolist()
    except OverflowError:  # an address beyond int64
        allocs = list(compress(range(len(addrs)), map(ne, addrs, repeat(-1))))
    copies = _present(copy_bytes)
    return sorted({*allocs, *copies}) if allocs and copies else allocs or copies


def _present(values: list[Any]) -> list[int]:
    """Positions of the values that are not None."""
    return list(compress(range(len(values)), map(is_not, values, repeat(None))))


def _spread(n: int, at: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` of the events at rows ``at`` (in order) as a column of ``n`` rows, -1 (absent)
    elsewhere; ``values`` itself when every row has one."""
    if len(values) == n:
        return values
    out = np.full(n, -1, dtype=values.dtype)  # -1 fits every signed id dtype
    out[at] = values
    return out


_EMPTY_DTYPES: dict[str, Any] = {"ph": "S1", "flow_bp": "S1", "ts": np.float64, "dur": np.float64}
