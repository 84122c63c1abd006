"""The region passes, in order, and the report they build for one region.

Every pass has one signature, ``pass(view, fields) -> new fields``: it reads the
:class:`~attnprof.analysis.index.views.RegionView` (the indexed ops and device events of one
region) and the fields earlier passes produced, and returns the
:class:`~attnprof.record.trace_report.RegionReport` fields it computes. :data:`REGION_PASSES`
applies them in order; a later pass may read an earlier one's fields (the verdict reads the
CPU and device times), never the reverse.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.pairs import names_matching, unique_pairs
from attnprof.analysis.index.views import RegionView
from attnprof.analysis.passes.allocations import measure_memory
from attnprof.analysis.passes.attention_share import measure_attention
from attnprof.analysis.passes.device_time import judge_boundness, measure_device_time
from attnprof.analysis.passes.kernel_stats import summarize_kernels
from attnprof.analysis.passes.op_stats import summarize_ops
from attnprof.analysis.passes.step_phases import split_steps
from attnprof.knowledge.sdpa_backends import sdpa_backend
from attnprof.knowledge.trace_categories import RUNTIME_CATEGORIES
from attnprof.record.trace_report import RegionReport

__all__ = ["REGION_PASSES", "RegionPass", "build_region_report", "measure_cpu_time",
           "outermost_cpu_ops"]

RegionPass = Callable[[RegionView, Mapping[str, Any]], dict[str, Any]]

# Runtime calls in which the CPU waits for the device: time in them is not dispatch
# (CUDA/HIP synchronize and blocking copies; Unified Runtime's queue finish and event wait).
_SYNC = re.compile(r"Synchronize|^cudaMemcpy$|^hipMemcpy$|^urQueueFinish$|^urEventWait$")


def measure_cpu_time(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields ``name``, ``instances`` and ``cpu_us_per_forward`` (dispatch, waits excluded).

    An annotated instance's CPU time is its duration; for the whole trace, which has no
    annotation, it is the time the busiest thread spent inside outermost ATen ops. Time
    spent waiting in a synchronizing runtime call on that thread is subtracted.
    """
    ops = view.ops
    t = ops.trace.events
    runtime = np.flatnonzero(t.mask_cat(*RUNTIME_CATEGORIES) & np.isfinite(t.dur))
    sync = runtime[names_matching(t.name[runtime], t.strings.__getitem__, _SYNC)]
    # Waits by thread, in time order: an instance's are one slice of its thread's.
    threads: dict[tuple[int, int], tuple[np.ndarray, list[float]]] = {}
    if len(sync):
        found = unique_pairs(t.pid[sync], t.tid[sync])
        for g, (pid, tid) in enumerate(zip(found.first.tolist(), found.second.tolist(),
                                           strict=True)):
            mine = sync[found.inverse == g]
            mine = mine[np.argsort(t.ts[mine], kind="stable")]
            threads[(pid, tid)] = (t.ts[mine], t.dur[mine].tolist())
    per: list[float] = []
    for inst in view.instances:
        pid, tid, spent = inst.pid, inst.tid, inst.dur
        if inst.op < 0:
            pid, tid, spent = _busiest_thread(view)
        waited = 0.0
        if (pid, tid) in threads:
            ts, durs = threads[(pid, tid)]
            lo = int(np.searchsorted(ts, inst.start, side="left"))
            hi = int(np.searchsorted(ts, inst.end, side="right"))
            waited = math.fsum(durs[lo:hi])
        per.append(max(spent - waited, 0.0))
    return {"name": view.name, "instances": view.n,
            "cpu_us_per_forward": math.fsum(per) / view.n if view.n else 0.0}


def _busiest_thread(view: RegionView) -> tuple[int, int, float]:
    """The thread that spent most time in ATen ops, and that time (outermost ops only).

    Annotations are left out: a ``record_function`` range may span sleeps and waits, an ATen
    op is work the CPU did.
    """
    ops = view.ops
    outer = outermost_cpu_ops(ops)
    best = (-1, -1, 0.0)
    for (pid, tid), (lo, hi) in ops.threads.items():
        mine = np.flatnonzero(outer[lo:hi]) + lo
        spent = math.fsum((ops.end[mine] - ops.start[mine]).tolist())
        if spent > best[2]:
            best = (pid, tid, spent)
    return best


def outermost_cpu_ops(ops: OpIndex) -> np.ndarray:
    """True for ATen ops not called by another ATen op (annotations in between don't count).

    An op is inside an ATen op when it lies in the subtree (a position range) of one: one
    difference array over those ranges, then a running sum.
    """
    inside = ops.subtrees(np.flatnonzero(~ops.annotation), strict=True)
    return ~inside & ~ops.annotation


def identify_sdpa_backend(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Field ``sdpa_backend``: the SDPA backend whose op ran in the region, if any."""
    return {"sdpa_backend": sdpa_backend(view.op_names)}


#: Applied in this order by :func:`build_region_report`.
REGION_PASSES: tuple[RegionPass, ...] = (
    measure_cpu_time,
    summarize_kernels,
    summarize_ops,
    measure_device_time,
    measure_memory,
    measure_attention,
    split_steps,
    identify_sdpa_backend,
    judge_boundness,
)


def build_region_report(view: RegionView, passes: tuple[RegionPass, ...] = REGION_PASSES
                        ) -> RegionReport:
    """Run ``passes`` over one region and assemble its report."""
    fields: dict[str, Any] = {}
    for p in passes:
        fields = {**fields, **p(view, fields)}
    return RegionReport(**fields)
