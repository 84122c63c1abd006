"""Reading torch.profiler Chrome traces into a columnar event table.

>>> from attnprof.trace import load_trace
>>> trace = load_trace("trace.json.gz")                       # doctest: +SKIP
>>> kernels = trace.events.where(trace.events.mask_cat("kernel"))  # doctest: +SKIP
"""

from __future__ import annotations

from attnprof.trace.loader import load_trace
from attnprof.trace.table import (
    ROW_COLUMNS,
    DistributedInfo,
    EventTable,
    KernelLaunches,
    MemoryRecords,
    StringTable,
    Trace,
    TraceMeta,
)

__all__ = [
    "ROW_COLUMNS",
    "DistributedInfo",
    "EventTable",
    "KernelLaunches",
    "MemoryRecords",
    "StringTable",
    "Trace",
    "TraceMeta",
    "load_trace",
]
