"""Peak memory inside a label: what the code in it allocated on top of what was held when
it began, from the allocator's ``[memory]`` events (``profile_memory=True``).

The running sum of signed allocation sizes is computed once per trace; a label's peak is
then the highest point of that sum inside its time window minus its value just before.
Device memory is used when the trace has any (that is the memory that runs out), as the
region pass :mod:`attnprof.analysis.passes.allocations` does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.passes.allocations import memory_rows
from attnprof.trace.table import MEMORY_CPU, MEMORY_CUDA

__all__ = ["MemoryTimeline", "memory_timeline"]


@dataclass(frozen=True)
class MemoryTimeline:
    """Allocation events in time order and the running sum after each."""

    ts: np.ndarray
    running: np.ndarray

    def peak_in(self, start: float, end: float) -> int | None:
        """Peak bytes allocated in ``[start, end]`` over the level at ``start`` (``None``
        when the trace has no memory events)."""
        if len(self.ts) == 0:
            return None
        lo = int(np.searchsorted(self.ts, start, side="left"))
        hi = int(np.searchsorted(self.ts, end, side="right"))
        if hi <= lo:
            return 0
        before = float(self.running[lo - 1]) if lo > 0 else 0.0
        return int(max(float(np.max(self.running[lo:hi])) - before, 0.0))


def memory_timeline(ops: OpIndex) -> MemoryTimeline:
    """The trace's allocations (device ones when there are any) as a running sum."""
    t = ops.trace.events
    rows = memory_rows(ops.trace)  # in time order; filtering keeps it
    if len(rows):
        kinds = t.memory_records.device_type[t.memory[rows]]
        rows = rows[kinds == (MEMORY_CUDA if np.any(kinds == MEMORY_CUDA) else MEMORY_CPU)]
    sizes = t.memory_records.bytes[t.memory[rows]] if len(rows) else np.empty(0)
    sizes = np.where(np.isfinite(sizes), sizes, 0.0)
    return MemoryTimeline(ts=t.ts[rows], running=np.cumsum(sizes))
