"""Reading torch.profiler Chrome traces into a columnar event table.

>>> from attnprof.trace import load_trace
>>> trace = load_trace("trace.json.gz")                       # doctest: +SKIP
>>> kernels = trace.events.where(trace.events.mask_cat("kernel"))  # doctest: +SKIP

The names below are imported on first use: :mod:`attnprof.trace.background` opens a trace
file (and starts inflating it) before numpy and the loader are imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = "attnprof.trace.loader" if name == "load_trace" else "attnprof.trace.table"
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups find it without this function
    return value
