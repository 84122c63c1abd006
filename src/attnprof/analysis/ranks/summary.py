"""One rank's trace, read and reduced to a :class:`~attnprof.record.ranks.RankSummary`.

:func:`read_rank` is what a worker runs per file: load the trace, index it once, measure
its profiler steps with the same region passes as ``attnprof analyze`` (CPU time, device
time by category, attention share, SDPA backend), add what a cross-rank view needs (each
step's time and collective time, kernels and attention ops by name, HTA's temporal
breakdown) and return the summary: a few kilobytes, whatever the trace's size. A trace
that cannot be read is a summary carrying the error, never an exception: one corrupt rank
must not cost the others.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from attnprof.analysis.index.device_events import DEVICE_KINDS, DeviceEvents, link_device_events
from attnprof.analysis.index.device_kind import identify_device
from attnprof.analysis.index.op_index import OpIndex, index_cpu_ops
from attnprof.analysis.index.pairs import names_matching
from attnprof.analysis.index.regions import Region, profiler_steps, step_number
from attnprof.analysis.index.views import RegionView, view_regions
from attnprof.analysis.passes import identify_sdpa_backend, measure_cpu_time
from attnprof.analysis.passes.attention_share import ATTENTION_OP, measure_attention
from attnprof.analysis.passes.device_time import measure_device_time
from attnprof.analysis.ranks.identify import RankFile
from attnprof.analysis.ranks.temporal import temporal_breakdown
from attnprof.errors import UsageError
from attnprof.knowledge.collectives import CPU_COLLECTIVE
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.knowledge.trace_categories import CATEGORIES
from attnprof.record.ranks import DeviceTotal, RankSummary, StepTime
from attnprof.trace import Trace, load_trace

__all__ = ["failed_rank", "read_rank", "summarize_rank"]

_COMMUNICATION = DEVICE_KINDS.index("communication")
#: The region passes a rank's steps need (the op tree, memory and findings are left out:
#: the cross-rank view does not show them, and they are most of a single trace's analysis).
_STEP_PASSES = (measure_cpu_time, measure_device_time, measure_attention,
                identify_sdpa_backend)


def read_rank(job: RankFile) -> RankSummary:
    """Load and summarise one rank's trace; an unreadable one is a row with its error."""
    try:
        # No kernel launch configurations, no memory records: the summary reads neither.
        trace = load_trace(job.location or job.path, side_tables=False)
    except (UsageError, OSError, MemoryError) as exc:
        reason = _reason(exc)
        if job.location:  # name the file as the user did, wherever the worker opened it
            reason = reason.replace(job.location, job.path)
        return failed_rank(job, reason)
    return summarize_rank(trace, job)


def failed_rank(job: RankFile, reason: str) -> RankSummary:
    """The row of a rank whose trace could not be read (or whose reader died)."""
    return RankSummary(source=job.path, rank=job.rank, rank_from=job.rank_from,
                       world_size=job.world_size, backend=job.backend, error=reason)


def summarize_rank(trace: Trace, job: RankFile) -> RankSummary:
    """The summary of a loaded trace, as rank ``job.rank`` (see the module doc)."""
    dist = trace.meta.distributed
    ops = index_cpu_ops(trace)
    devices = link_device_events(ops)
    device = identify_device(trace).kind
    steps = profiler_steps(ops)
    summary = RankSummary(
        source=job.path, rank=job.rank, rank_from=job.rank_from,
        world_size=dist.world_size if dist and dist.world_size else job.world_size,
        backend=dist.backend if dist and dist.backend else job.backend,
        device=device, events=trace.meta.n_events,
        device_totals=_device_totals(trace, devices),
        temporal=temporal_breakdown(ops, devices, steps))
    if dist is not None and dist.rank is not None and dist.rank != job.rank:
        summary.notes.append(f"its distributedInfo says rank {dist.rank}, its file name "
                             f"rank {job.rank}")
    if steps is None:
        summary.notes.append("no ProfilerStep markers: its steps cannot be compared with the "
                             "other ranks' (record with a torch.profiler schedule and call "
                             "prof.step() once per step)")
        return summary
    views, _ = view_regions(ops, devices, [steps], device)
    _measure_steps(summary, views[0], steps, devices)
    return summary


def _measure_steps(summary: RankSummary, view: RegionView, steps: Region,
                   devices: DeviceEvents) -> None:
    fields: dict[str, Any] = {}
    for measure in _STEP_PASSES:
        fields.update(measure(view, fields))
    n = view.n
    kernels, counts = _kernels(view, devices)
    coll_us, coll_n = _collectives(view, devices)
    names = [view.ops.trace.events.strings[int(view.ops.name[i.op])] for i in steps.instances]
    summary.steps = [
        StepTime(step=step_number(name) or k, dur_us=inst.dur, collective_us=coll_us[k],
                 collectives=int(coll_n[k]), kernels=int(counts[k]))
        for k, (inst, name) in enumerate(zip(steps.instances, names, strict=True))]
    summary.kernel_source = "kernels" if view.on_device else "cpu-ops"
    summary.kernels_per_step = float(counts.sum()) / n
    summary.cpu_us_per_step = fields["cpu_us_per_forward"]
    summary.categories_us = _categories(fields, coll_us, n, view.on_device)
    summary.attention_us_per_step = fields["attention_us_per_forward"]
    summary.attention_share = fields["attention_share"]
    summary.sdpa_backend = fields["sdpa_backend"]
    summary.kernels = kernels
    summary.attention = _attention(view, kernels)


def _device_totals(trace: Trace, devices: DeviceEvents) -> list[DeviceTotal]:
    """Every device event by category: count and the exact sum of the durations the trace
    wrote (as :func:`~attnprof.analysis.passes.breakdown.kernel_breakdown` counts them,
    without its per-name table)."""
    durations = trace.events.dur
    return [DeviceTotal(category=category, count=len(rows),
                        total_us=math.fsum(durations[rows].tolist()))
            for category in CATEGORIES
            for rows in [devices.row[devices.kind == DEVICE_KINDS.index(category)]]]


def _categories(fields: Mapping[str, Any], coll_us: list[float], n: int,
                on_device: bool) -> dict[str, float]:
    """Per step: the device's categories on a GPU; on a CPU the compute ops' work, the
    collectives' time (on the process group's threads) and the rest of the CPU time."""
    categories = dict(fields["categories_us"])
    if not on_device:
        categories = {"compute": categories.get("compute", 0.0),
                      "communication": math.fsum(coll_us) / n,
                      "framework": categories.get("framework", 0.0)}
    return categories


def _kernels(view: RegionView, devices: DeviceEvents) -> tuple[dict[str, float], np.ndarray]:
    """Every kernel (compute op on a CPU trace) by name, count per step, and each step's
    count."""
    strings = view.ops.trace.events.strings
    if view.on_device:
        ids = devices.name[view.device_visits]
        per_step = np.diff(view.device_bounds)
    else:
        chosen = view.compute_mask
        ids = view.ops.name[view.op_positions[chosen]]
        per_step = np.bincount(view.visit_instance[chosen], minlength=view.n)
    found, counts = np.unique(ids, return_counts=True)
    by_name = {strings[int(i)]: c / view.n for i, c in zip(found.tolist(), counts.tolist(),
                                                           strict=True)}
    return by_name, per_step.astype(np.int64)


def _collectives(view: RegionView, devices: DeviceEvents) -> tuple[list[float], np.ndarray]:
    """Each step's time in collectives (µs, exactly summed) and their number: the
    communication kernels on a GPU, else (a CPU run, or gloo moving CUDA tensors through
    the host) the backend's collective annotations."""
    owner, durs = np.zeros(0, dtype=np.int64), np.zeros(0)
    if view.on_device:
        at = view.device_visits
        mine = devices.kind[at] == _COMMUNICATION
        owner = view.device_instance[mine]
        durs = (devices.end[at] - devices.start[at])[mine]
    if not len(owner):
        ops: OpIndex = view.ops
        positions = view.op_positions
        mine = names_matching(ops.name[positions], ops.trace.events.strings.__getitem__,
                              CPU_COLLECTIVE) & ops.annotation[positions]
        owner = view.visit_instance[mine]
        durs = ops.end[positions[mine]] - ops.start[positions[mine]]
    per: list[list[float]] = [[] for _ in range(view.n)]
    for k, d in zip(owner.tolist(), durs.tolist(), strict=True):
        per[k].append(d)
    return [math.fsum(p) for p in per], np.array([len(p) for p in per], dtype=np.int64)


def _attention(view: RegionView, kernels: dict[str, float]) -> dict[str, float]:
    """Attention ops and fused-attention kernels that ran, by name: count per step."""
    ops = view.ops
    strings = ops.trace.events.strings
    names = ops.name[view.op_positions]
    chosen = names_matching(names, strings.__getitem__, ATTENTION_OP) \
        & ~ops.annotation[view.op_positions]
    found, counts = np.unique(names[chosen], return_counts=True)
    out = {strings[int(i)]: c / view.n for i, c in zip(found.tolist(), counts.tolist(),
                                                       strict=True)}
    if view.on_device:
        out.update({name: n for name, n in kernels.items()
                    if decode_kernel_name(name).is_attention})
    return dict(sorted(out.items()))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, UsageError):
        return str(exc)
    if isinstance(exc, MemoryError):
        return "out of memory while reading it"
    return getattr(exc, "strerror", None) or str(exc)
