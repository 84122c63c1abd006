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
from attnprof.analysis.index.views import RegionView
from attnprof.trace import Trace

__all__ = ["measure_memory"]

_CPU, _CUDA = 0, 1


def measure_memory(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields ``peak_memory_bytes``, ``largest_allocation_*`` and ``memory_device``."""
    none = {"peak_memory_bytes": None, "largest_allocation_bytes": None,
            "largest_allocation_op": None, "memory_device": None}
    rows = _memory_rows(view.ops.trace)
    if len(rows) == 0:
        return none
    t = view.ops.trace.events
    ts = t.ts[rows]
    per_instance = [rows[(ts >= inst.start) & (ts <= inst.end)] for inst in view.instances]
    mine = np.concatenate(per_instance)
    if len(mine) == 0:
        return none
    kinds = t.memory_records.device_type[t.memory[mine]]
    kind = _CUDA if np.any(kinds == _CUDA) else _CPU
    peak, largest, largest_row = 0.0, 0.0, -1
    for chosen in per_instance:
        chosen = chosen[t.memory_records.device_type[t.memory[chosen]] == kind]
        sizes = t.memory_records.bytes[t.memory[chosen]]
        sizes = np.where(np.isfinite(sizes), sizes, 0.0)
        if len(sizes):
            peak = max(peak, float(np.max(np.cumsum(sizes))))
            j = int(np.argmax(sizes))
            if sizes[j] > largest:
                largest, largest_row = float(sizes[j]), int(chosen[j])
    op = None
    if largest_row >= 0:
        at = view.ops.enclosing(int(t.pid[largest_row]), int(t.tid[largest_row]),
                                float(t.ts[largest_row]))
        # Name the op that asked for the memory, not the allocation primitive inside it.
        while at >= 0 and view.ops.name_of(at) in METADATA_OPS and view.ops.parent[at] >= 0:
            at = int(view.ops.parent[at])
        op = view.ops.name_of(at) if at >= 0 else None
    return {"peak_memory_bytes": int(max(peak, 0.0)),
            "largest_allocation_bytes": int(largest) if largest_row >= 0 else None,
            "largest_allocation_op": op, "memory_device": "cuda" if kind == _CUDA else "cpu"}


def _memory_rows(trace: Trace) -> np.ndarray:
    """Rows of the trace's ``[memory]`` events with a byte count, in time order."""
    t = trace.events
    rows = np.flatnonzero(t.mask_named("[memory]") & (t.memory >= 0)
                          & np.isfinite(t.ts))
    return rows[np.argsort(t.ts[rows], kind="stable")]
