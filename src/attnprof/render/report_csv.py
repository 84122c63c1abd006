"""CSV rendering of a run record: one line per variant, for spreadsheets and plots.

Each line carries the workload's fields too, so the files of several runs (other shapes,
dtypes, machines) concatenate into one table. Numbers are written as measured, unrounded;
an absent value is an empty cell.
"""

from __future__ import annotations

import csv
import io
import os
from typing import Any

from attnprof.atomic import write_atomic
from attnprof.record.run import RunRecord, VariantResult

__all__ = ["COLUMNS", "render_csv", "write_csv"]

_WORKLOAD = ("batch", "heads", "kv_heads", "seq", "kv_seq", "head_dim", "dtype", "device",
             "causal", "mode")
_RESULT = ("variant", "status", "median_ms", "iqr_ms", "noisy", "samples", "cpu_dispatch_ms",
           "device_ms", "compile_time_s", "tflops_per_s", "flops_of_ceiling", "gbytes_per_s",
           "bandwidth_of_ceiling", "peak_memory_bytes", "max_abs_error", "within_tolerance",
           "sdpa_backend", "reason")
#: The header, in order: the variant's fields, then the workload's, then the machine.
COLUMNS: tuple[str, ...] = (*_RESULT, *_WORKLOAD, "device_name", "torch", "created")


def render_csv(record: RunRecord) -> str:
    """The CSV text of ``record``: a header and one line per variant."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    shared = {k: record.workload.get(k) for k in _WORKLOAD}
    shared.update(device_name=record.environment.device_name,
                  torch=record.environment.torch, created=record.created)
    for r in record.results:
        writer.writerow({**_result(r), **shared})
    return out.getvalue()


def write_csv(path: str | os.PathLike[str], record: RunRecord) -> None:
    """Write :func:`render_csv` of ``record`` to ``path`` atomically."""
    write_atomic(path, render_csv(record).encode())


def _result(r: VariantResult) -> dict[str, Any]:
    lat = r.latency_ms
    row: dict[str, Any] = {k: getattr(r, k) for k in _RESULT if hasattr(r, k)}
    row.update(median_ms=lat.median if lat else None, iqr_ms=lat.iqr if lat else None,
               noisy=lat.noisy if lat else None, samples=lat.count if lat else None)
    return row
