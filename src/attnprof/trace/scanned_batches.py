"""How :class:`~attnprof.trace.builder.TableBuilder` takes a batch the C scanner read.

:class:`ScannedBatches` is a mixin of TableBuilder: :meth:`~ScannedBatches.add_records`
turns the scanner's columns (:meth:`attnprof.trace.scan.Scanner.scan`) into the same table
columns, string ids, launch and memory rows and track metadata that ``TableBuilder.add``
makes of the same events decoded by msgspec, in numpy rather than a Python step per event.
The state and the rules both paths share (string interning, timestamps, track ids, what a
metadata event says, skipped-event counts) stay in the builder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from attnprof.trace.columns import Column, absent, narrow
from attnprof.trace.scan import F_ALLOC, F_BLOCK, F_COPY, F_SORT, F_TOTAL, TokenIds
from attnprof.trace.schema import NAN

__all__ = ["ScannedBatches"]


class ScannedBatches:
    """TableBuilder's reading of scanned batches (a mixin: the state is the builder's)."""

    if TYPE_CHECKING:  # what TableBuilder provides
        side_tables: bool
        _token_ids: TokenIds
        _cols: dict[str, Column]
        _mem: tuple[Column, ...]
        _launch_ids: dict[tuple[Any, ...], int]

        def _scanned_ts(self, cols: dict[str, np.ndarray],
                        raw_ts: Callable[[], Sequence[msgspec.Raw]]) -> np.ndarray: ...
        def _count_skipped(self, codes: np.ndarray, ts: np.ndarray, dur: np.ndarray,
                           ts_values: Sequence[int | float] | None,
                           written: tuple[list[bool], list[bool]] | None) -> None: ...
        def _track_id(self, value: int | str) -> int: ...
        def _take_meta(self, event: str, pid: int, tid: int, name: str | None,
                       labels: str | None, sort_index: int | None) -> None: ...
        def _intern_text(self, text: str) -> int: ...
        def _raw_id(self, raw: bytes) -> int: ...

    def add_records(
        self, cols: dict[str, np.ndarray], raw_ts: Callable[[], Sequence[msgspec.Raw]]
    ) -> None:
        """Append one batch read by the C scanner (:meth:`attnprof.trace.scan.Scanner.scan`),
        giving the same columns as ``TableBuilder.add`` of the same events; ``raw_ts()``
        gives each event's ``ts`` as written, as there.

        The scanner reads no string flow ids or streams and no integer beyond 18 digits, so
        only ``add``'s typed cases occur. Its columns hold every args field's absent value
        on events without args, which is what ``add`` spreads there, so no per-args subset
        is needed.
        """
        n = len(cols["flags"])
        if n == 0:
            return
        ts = self._scanned_ts(cols, raw_ts)  # metadata rows' stamps count for the origin
        cols = self._scanned_tracks(cols)
        meta = cols["ph"] == b"M"
        if meta.any():  # as add does: metadata events go to TraceMeta, not into the table
            self._take_metadata_records(cols, np.flatnonzero(meta))
            keep = ~meta
            cols = {name: column[keep] for name, column in cols.items()}
            ts = ts[keep]
            n = len(ts)
            if n == 0:
                return
        flags = cols["flags"]
        names = self._token_ids
        codes = cols["ph"].copy()
        dur = cols["dur"].copy()
        self._count_skipped(codes, ts, dur, None, None)
        # Events without args have addr -1 and no "bytes", so these find args rows only.
        memory = np.flatnonzero((cols["addr"] != -1) | ((flags & F_COPY) != 0))
        device = narrow(cols["device"])
        if memory.size:  # as in add: [memory] events say "Device Id", not "device"
            ids = narrow(cols["device_id"][memory])
            device = device.astype(np.result_type(device, ids))  # a copy: writable
            device[memory] = np.where(device[memory] == -1, ids, device[memory])
        out = {
            "ph": codes,
            "cat": narrow(names.texts(cols["cat"], self._intern_text)),
            "name": narrow(names.texts(cols["name"], self._intern_text)),
            "pid": narrow(cols["pid"]),
            "tid": narrow(cols["tid"]),
            "ts": ts,
            "dur": dur,
            "correlation": narrow(cols["correlation"]),
            "external_id": narrow(cols["external_id"]),
            "flow_id": narrow(cols["flow_id"]),
            "flow_bp": cols["bp"],
            "device": device,
            "stream": narrow(cols["stream"]),
            "sequence_number": narrow(cols["sequence_number"]),
            "input_dims": narrow(names.raws(cols["input_dims"], self._raw_id)),
            "input_types": narrow(names.raws(cols["input_types"], self._raw_id)),
            "launch": narrow(self._launch_records(cols, np.flatnonzero(flags & F_BLOCK)))
                      if self.side_tables else absent(n),
            "memory": narrow(self._memory_records(cols, memory))
                      if self.side_tables else absent(n),
        }
        for column, array in out.items():
            self._cols[column].append(array)

    def _launch_records(self, cols: dict[str, np.ndarray], hits: np.ndarray) -> np.ndarray:
        """``TableBuilder._launches`` for scanned columns: each distinct configuration is looked up
        once, in order of first appearance, so the launch table's rows come out the same."""
        rows = np.full(len(cols["flags"]), -1, dtype=np.int32)
        if not hits.size:
            return rows
        keys = np.empty(len(hits), dtype=_LAUNCH_KEY)
        keys["ints"] = np.concatenate(
            [cols["grid"][hits], cols["block"][hits], cols["regs"][hits, None],
             cols["smem"][hits, None]], axis=1)
        keys["floats"] = np.stack([cols["bps"][hits], cols["wps"][hits], cols["occ"][hits]],
                                  axis=1)
        # Equal bytes <=> equal keys: the scanner gives no -0.0, and nan only as the absent
        # value, which the key holds as the schema's one NAN object, as Args() does.
        first, inverse = _distinct_rows(keys.view(np.dtype((np.void, _LAUNCH_KEY.itemsize))))
        ids = self._launch_ids
        found = np.empty(len(first), dtype=np.int32)
        ints, floats = keys["ints"][first].tolist(), keys["floats"][first].tolist()
        for u in np.argsort(first, kind="stable").tolist():
            i, f = ints[u], floats[u]
            key = (tuple(i[:6]), i[6], i[7], *(NAN if v != v else v for v in f))
            found[u] = ids.setdefault(key, len(ids))
        rows[hits] = found[inverse]
        return rows

    def _memory_records(self, cols: dict[str, np.ndarray], hits: np.ndarray) -> np.ndarray:
        """``TableBuilder._memory`` for scanned columns."""
        rows = np.full(len(cols["flags"]), -1, dtype=np.int32)
        if hits.size:
            kind = cols["flags"][hits]
            nbytes = np.where(kind & F_ALLOC, cols["alloc"][hits],
                              np.where(kind & F_COPY, cols["copy"][hits], np.nan))
            total = np.where(kind & F_TOTAL, cols["total"][hits], np.nan)
            nbytes_col, total_col, addr_col, kind_col = self._mem
            nbytes_col.append(nbytes.astype(np.float64))
            total_col.append(total.astype(np.float64))
            addr_col.append(cols["addr"][hits])
            kind_col.append(narrow(cols["device_type"][hits]))
            n = nbytes_col.n
            rows[hits] = np.arange(n - len(hits), n, dtype=np.int32)
        return rows

    def _scanned_tracks(self, cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``TableBuilder._tracks`` for scanned columns: pids and tids written as strings get their
        ids in event order, pid before tid, as there (metadata rows included)."""
        texts = np.flatnonzero((cols["pid_text"] >= 0) | (cols["tid_text"] >= 0))
        if not texts.size:
            return cols
        pid, tid = cols["pid"].copy(), cols["tid"].copy()
        for i, pid_text, tid_text in zip(texts.tolist(), cols["pid_text"][texts].tolist(),
                                         cols["tid_text"][texts].tolist(), strict=True):
            for ids, token in ((pid, pid_text), (tid, tid_text)):
                value = int(ids[i]) if token < 0 else self._token_ids.text(token) or ""
                ids[i] = self._track_id(value)
        return {**cols, "pid": pid, "tid": tid}

    def _take_metadata_records(self, cols: dict[str, np.ndarray], rows: np.ndarray) -> None:
        """``TableBuilder._take_metadata`` for scanned metadata rows. Their texts are
        decoded here and not interned: the table's strings are those of the rows it keeps."""
        text = self._token_ids.text

        sorted_ = (cols["flags"][rows] & F_SORT) != 0
        for event, pid, tid, name, labels, sort_index, has_sort in zip(
            cols["name"][rows].tolist(), cols["pid"][rows].tolist(), cols["tid"][rows].tolist(),
            cols["meta_name"][rows].tolist(), cols["meta_labels"][rows].tolist(),
            cols["sort_index"][rows].tolist(), sorted_.tolist(), strict=True,
        ):
            self._take_meta(text(event) or "", pid, tid, text(name), text(labels),
                            sort_index if has_sort else None)


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index of each distinct value, each value's distinct one) of a void array: what
    ``np.unique(return_index, return_inverse)`` gives, without importing ``numpy.ma``."""
    order = np.argsort(rows, kind="stable")  # stable: a group's first row is its earliest
    ordered = rows[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    inverse = np.empty(len(rows), dtype=np.intp)
    inverse[order] = np.cumsum(starts) - 1
    return order[starts], inverse


# A launch configuration as bytes: grid, block, registers, shared memory; the three floats.
_LAUNCH_KEY = np.dtype([("ints", np.int64, (8,)), ("floats", np.float64, (3,))])
