"""Memory per forward, from the allocator's ``[memory]`` events (``profile_memory=True``).

A region pass (see :mod:`attnprof.analysis.passes`). Each ``[memory]`` instant
carries the signed byte count of one allocation (positive) or free (negative). Inside one
instance, the running sum of these is the memory the forward holds on top of what was
allocated before it started; its maximum is the forward's peak. The largest single
allocation is where a materialised score matrix shows up, so the op that made it is named.

On a GPU trace both allocators write events; the device one (``Device Type`` 1) is used when
the region has any, since that is the memory that runs out. Events from any thread inside the
instance's time window count, like launches do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from attnprof.analysis.index.compute_ops import METADATA_OPS
from attnprof.analysis.index.views import RegionView, flat_ranges
from attnprof.trace import Trace
from attnprof.trace.table import MEMORY_CPU, MEMORY_CUDA

__all__ = ["measure_memory", "memory_rows"]

_EXACT = float(2**53)


def measure_memory(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields ``peak_memory_bytes``, ``largest_allocation_*`` and ``memory_device``."""
    none = {"peak_memory_bytes": None, "largest_allocation_bytes": None,
            "largest_allocation_op": None, "memory_device": None}
    rows = memory_rows(view.ops.trace)
    if len(rows) == 0:
        return none
    t = view.ops.trace.events
    ts = t.ts[rows]
    # Each instance's events are one slice of the time-sorted rows.
    lo = np.searchsorted(ts, [inst.start for inst in view.instances], side="left")
    hi = np.searchsorted(ts, [inst.end for inst in view.instances], side="right")
    at, _ = flat_ranges(lo, hi)
    if len(at) == 0:
        return none
    owner = np.repeat(np.arange(view.n), np.maximum(hi - lo, 0))
    mine = rows[at]
    records = t.memory_records
    kinds = records.device_type[t.memory[mine]]
    kind = MEMORY_CUDA if np.any(kinds == MEMORY_CUDA) else MEMORY_CPU
    chosen = kinds == kind
    mine, owner = mine[chosen], owner[chosen]
    sizes = records.bytes[t.memory[mine]]
    sizes = np.where(np.isfinite(sizes), sizes, 0.0)
    peak = _peak(sizes, owner)
    # The largest single allocation: the first instance holding the largest size, and the
    # first event of that size in it.
    largest, largest_row = 0.0, -1
    if len(sizes) and float(sizes.max()) > 0:
        largest = float(sizes.max())
        largest_row = int(mine[np.flatnonzero(sizes == largest)[0]])
    op = None
    if largest_row >= 0:
        at_op = view.ops.enclosing(int(t.pid[largest_row]), int(t.tid[largest_row]),
                                   float(t.ts[largest_row]))
        # Name the op that asked for the memory, not the allocation primitive inside it.
        while (at_op >= 0 and view.ops.name_of(at_op) in METADATA_OPS
               and view.ops.parent[at_op] >= 0):
            at_op = int(view.ops.parent[at_op])
        op = view.ops.name_of(at_op) if at_op >= 0 else None
    return {"peak_memory_bytes": int(max(peak, 0.0)),
            "largest_allocation_bytes": int(largest) if largest_row >= 0 else None,
            "largest_allocation_op": op,
            "memory_device": "cuda" if kind == MEMORY_CUDA else "cpu"}


def _peak(sizes: np.ndarray, owner: np.ndarray) -> float:
    """The largest running sum of ``sizes`` within any instance (0 when there are none).

    Byte counts are whole numbers, so one running sum over all instances, less its value
    where each instance begins, gives each instance's running sums exactly; past 2**53, where
    float64 stops holding every whole number, the instances are summed one by one.
    """
    if not len(sizes):
        return 0.0
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    total = np.cumsum(sizes)
    if np.abs(total).max() < _EXACT and np.abs(sizes).sum() < _EXACT:
        base = np.repeat(np.r_[0.0, total[starts[1:] - 1]], np.diff(np.r_[starts, len(sizes)]))
        return max(float(np.max(total - base)), 0.0)
    ends = np.r_[starts[1:], len(sizes)]
    return max(0.0, *(float(np.max(np.cumsum(sizes[a:b]))) for a, b in
                      zip(starts.tolist(), ends.tolist(), strict=True)))


def memory_rows(trace: Trace) -> np.ndarray:
    """Rows of the trace's ``[memory]`` events with a byte count, in time order."""
    t = trace.events
    rows = np.flatnonzero(t.mask_named("[memory]") & (t.memory >= 0) & t.mask_timed())
    return rows[np.argsort(t.ts[rows], kind="stable")]
