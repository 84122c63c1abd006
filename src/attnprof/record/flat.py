"""Records as flat tables: one line per variant (a comparison), per point and variant (a
sweep), per region (an analysis), per layer of each run (a model), per row and metric (a
diff), per rank (a rank set). The CSV renderer writes these lines and
:meth:`~attnprof.record.base.RecordBase.to_frame` makes DataFrames of them, so both have
the same columns (documented in the README's "History and diffs"). Values are as
measured, unrounded; ``None`` where absent.
"""

from __future__ import annotations

from typing import Any

from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.base import RecordBase
from attnprof.record.check import CheckRecord
from attnprof.record.compare import CompareRecord, VariantResult
from attnprof.record.diff import DiffRecord
from attnprof.record.environment import Environment
from attnprof.record.limits import LimitsRecord
from attnprof.record.model import ModelRecord
from attnprof.record.model_attribution import (
    ATTENTION_COMPONENTS,
    ATTENTION_KINDS,
    REST_COMPONENTS,
)
from attnprof.record.ranks import RanksRecord
from attnprof.record.sweep import SweepRecord
from attnprof.spec.workload import Workload

__all__ = ["ANALYSIS_COLUMNS", "COLUMNS", "DIFF_COLUMNS", "MODEL_COLUMNS", "RANK_COLUMNS",
           "analysis_lines", "compare_lines", "diff_lines", "flat_table", "model_lines",
           "ranks_lines", "sweep_lines"]

_WORKLOAD = ("batch", "heads", "kv_heads", "seq", "kv_seq", "head_dim", "dtype", "device",
             "causal", "mode")
_RESULT = ("variant", "status", "median_ms", "iqr_ms", "noisy", "samples", "cpu_dispatch_ms",
           "device_ms", "compile_time_s", "tflops_per_s", "flops_of_ceiling", "gbytes_per_s",
           "bandwidth_of_ceiling", "peak_memory_bytes", "minor_faults_per_call",
           "max_abs_error", "nonfinite_values", "within_tolerance",
           "sdpa_backend", "reason")
#: The comparison header, in order: the variant's fields, then the workload's, then the
#: machine and the run.
COLUMNS: tuple[str, ...] = (*_RESULT, *_WORKLOAD, "device_name", "torch", "created")
_REGION = ("name", "instances", "kernels_per_forward", "kernel_source", "cpu_us_per_forward",
           "device_us_per_forward", "verdict", "attention_share", "peak_memory_bytes",
           "sdpa_backend")
#: The analysis header: the trace, then one region's figures, then its findings' count.
ANALYSIS_COLUMNS: tuple[str, ...] = ("source", "device", *(f"region_{c}" if c == "name" else c
                                                           for c in _REGION), "findings")


_MODEL_RUN = ("implementation", "phase", "status", "median_ms", "tokens_per_s",
              "peak_memory_bytes", "attention_share", "core_share", "sdpa_backend",
              "shares_unreliable", "max_abs_diff", "within_tolerance",
              "instrumentation_overhead", "instrumentation_overhead_low",
              "instrumentation_overhead_high", "reason")
_MODEL_LAYER = ("layer", "layer_index", "time_basis", "layer_cpu_us", "layer_device_us",
                "layer_work_us", "layer_attention_cpu_us", "layer_attention_device_us",
                "layer_attention_work_us", "layer_attention_share",
                *(f"layer_{k}_us" for k in ATTENTION_KINDS),
                "top_component", "core_kernels", "actual", "layer_peak_memory_bytes")
#: The model header: the run, the layer, each component's time on the attribution's basis
#: (device, or CPU wall time), its CPU wall time and its time inside ATen ops (CPU traces;
#: µs per step), then the model and the machine.
MODEL_COLUMNS: tuple[str, ...] = (
    *_MODEL_RUN, *_MODEL_LAYER,
    *(f"{c}_us" for c in (*ATTENTION_COMPONENTS, *REST_COMPONENTS)),
    *(f"{c}_cpu_us" for c in (*ATTENTION_COMPONENTS, *REST_COMPONENTS)),
    *(f"{c}_work_us" for c in (*ATTENTION_COMPONENTS, *REST_COMPONENTS)),
    "model", "architecture", "dtype", "device", "batch", "seq", "device_name", "torch",
    "created")
#: The rank set header: the rank, its figures per step, HTA's breakdown, the set.
RANK_COLUMNS: tuple[str, ...] = (
    "rank", "source", "rank_from", "world_size", "backend", "device", "error", "steps",
    "step_us", "cpu_us_per_step", "compute_us", "communication_us", "memcpy_us", "memset_us",
    "idle_us", "framework_us", "collective_us_per_step", "kernels_per_step", "kernel_source",
    "attention_us_per_step", "attention_share", "sdpa_backend", "device_events",
    "device_us", "hta_span_us", "hta_compute_us", "hta_non_compute_us", "hta_idle_us",
    "hta_overlap", "straggler_steps", "findings", "created")
#: The diff header: the row's key (variant, or point coordinates and variant, or
#: implementation, phase and layer, as one text), its state, then one metric's figures.
DIFF_COLUMNS: tuple[str, ...] = (
    "key", "state", "old_status", "new_status", "metric", "unit", "old", "new", "change",
    "n_old", "n_new", "p_value", "p_adjusted", "significant", "detectable", "reason",
    "old_run", "new_run")


def flat_table(record: RecordBase) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """The columns and lines of any record kind."""
    if isinstance(record, AnalyzeRecord):
        return ANALYSIS_COLUMNS, analysis_lines(record)
    if isinstance(record, SweepRecord):
        return COLUMNS, sweep_lines(record)
    if isinstance(record, ModelRecord):
        return MODEL_COLUMNS, model_lines(record)
    if isinstance(record, DiffRecord):
        return DIFF_COLUMNS, diff_lines(record)
    if isinstance(record, RanksRecord):
        return RANK_COLUMNS, ranks_lines(record)
    if isinstance(record, CompareRecord):
        return COLUMNS, compare_lines(record)
    from attnprof.record.flat_checks import (
        CHECK_COLUMNS,
        LIMITS_COLUMNS,
        check_lines,
        limits_lines,
    )

    if isinstance(record, CheckRecord):
        return CHECK_COLUMNS, check_lines(record)
    if isinstance(record, LimitsRecord):
        return LIMITS_COLUMNS, limits_lines(record)
    raise TypeError(f"no flat table of {type(record).__name__}")


def compare_lines(record: CompareRecord) -> list[dict[str, Any]]:
    """A comparison: one line per variant."""
    shared = _shared(record.workload, record.environment, record.created)
    return [{**_result(r), **shared} for r in record.results]


def sweep_lines(record: SweepRecord) -> list[dict[str, Any]]:
    """A sweep: the comparison's columns, one line per point and variant (so a sweep's
    lines and a comparison's concatenate into one table)."""
    lines = []
    for point in record.ordered_points():
        shared = _shared(point.workload, point.environment or record.environment,
                         record.created)
        lines += [{**_result(r), **shared} for r in point.results]
    return lines


def _shared(workload: Workload, environment: Environment, created: str) -> dict[str, Any]:
    shared: dict[str, Any] = {k: getattr(workload, k) for k in _WORKLOAD}
    shared.update(device_name=environment.device_name, torch=environment.torch,
                  created=created)
    return shared


def analysis_lines(record: AnalyzeRecord) -> list[dict[str, Any]]:
    """An analysis: one line per region of every trace."""
    lines = []
    for report in record.reports:
        findings: dict[str | None, int] = {}
        for f in report.findings:
            findings[f.region] = findings.get(f.region, 0) + 1
        for region in report.regions:
            line: dict[str, Any] = {"source": report.source, "device": report.device,
                                    "findings": findings.get(region.name, 0)}
            line.update({("region_name" if c == "name" else c): getattr(region, c)
                         for c in _REGION})
            lines.append(line)
    return lines


def model_lines(record: ModelRecord) -> list[dict[str, Any]]:
    """A model run: one line per layer of each run (one line for a run that did not
    measure), the run's figures repeated on each."""
    m = record.model
    shared = {"model": m.source, "architecture": m.architecture, "dtype": m.dtype,
              "device": m.device, "batch": m.batch, "seq": m.seq,
              "device_name": record.environment.device_name,
              "torch": record.environment.torch, "created": record.created}
    lines: list[dict[str, Any]] = []
    for run in record.runs:
        base: dict[str, Any] = {k: getattr(run, k) for k in _MODEL_RUN if hasattr(run, k)}
        base["median_ms"] = run.latency_ms.median if run.latency_ms else None
        low, high = run.instrumentation_overhead_range or (None, None)
        base.update(instrumentation_overhead_low=low, instrumentation_overhead_high=high)
        att = run.attribution
        if att is None or not att.layers:
            lines.append({**base, **shared})
            continue
        for layer in att.layers:
            line = {**base, **shared, "layer": layer.name, "layer_index": layer.index,
                    "time_basis": att.time_basis, "layer_cpu_us": layer.cpu_us,
                    "layer_device_us": layer.device_us, "layer_work_us": layer.work_us,
                    "layer_attention_cpu_us": layer.attention_cpu_us,
                    "layer_attention_device_us": layer.attention_device_us,
                    "layer_attention_work_us": layer.attention_work_us,
                    "layer_attention_share": layer.attention_share,
                    "top_component": layer.top_component, "core_kernels": layer.core_kernels,
                    "actual": layer.actual, "layer_peak_memory_bytes": layer.peak_memory_bytes}
            line.update({f"layer_{k.name}_us": k.on(att.time_basis) for k in layer.kinds})
            line.update({f"{c.name}_cpu_us": c.cpu_us for c in layer.components})
            line.update({f"{c.name}_work_us": c.work_us for c in layer.components})
            line.update({f"{c.name}_us": c.on(att.time_basis) for c in layer.components})
            lines.append(line)
    return lines


def _result(r: VariantResult) -> dict[str, Any]:
    lat = r.latency_ms
    row: dict[str, Any] = {k: getattr(r, k) for k in _RESULT if hasattr(r, k)}
    row.update(median_ms=lat.median if lat else None, iqr_ms=lat.iqr if lat else None,
               noisy=lat.noisy if lat else None, samples=lat.count if lat else None)
    return row


def diff_lines(record: DiffRecord) -> list[dict[str, Any]]:
    """A diff: one line per row and metric (one line for a row without metrics), then one
    per kernel, op and launch call of each compared trace region (metric ``per_forward``,
    the state ``added``, ``removed``, ``more``, ``fewer`` or ``same``)."""
    lines: list[dict[str, Any]] = []
    for row in record.rows:
        base = {"key": " ".join(f"{k}={v}" for k, v in row.key.items()), "state": row.state,
                "old_status": row.old_status, "new_status": row.new_status,
                "reason": row.reason, "old_run": record.old.run_id or record.old.ref,
                "new_run": record.new.run_id or record.new.ref}
        if not row.metrics:
            lines.append(base)
        for m in row.metrics:
            lines.append({**base, "metric": m.metric, "unit": m.unit, "old": m.old,
                          "new": m.new, "change": m.change, "n_old": m.n_old,
                          "n_new": m.n_new, "p_value": m.p_value, "p_adjusted": m.p_adjusted,
                          "significant": m.significant, "detectable": m.detectable})
    runs = {"old_run": record.old.run_id or record.old.ref,
            "new_run": record.new.run_id or record.new.ref}
    for trace in record.traces:
        where = trace.name or f"{trace.old_source} -> {trace.new_source}"
        for region in trace.regions:
            for c in (*region.kernels, *region.ops, *region.launches):
                lines.append({
                    "key": f"trace={where} region={region.new_name} {c.what}={c.name}",
                    "state": c.state, "metric": "per_forward", "unit": "count",
                    "old": c.old_per_forward, "new": c.new_per_forward,
                    "change": (c.new_per_forward / c.old_per_forward - 1.0
                               if c.old_per_forward else None), **runs})
    return lines


def ranks_lines(record: RanksRecord) -> list[dict[str, Any]]:
    """A rank set: one line per rank (an unreadable one with its error)."""
    lines: list[dict[str, Any]] = []
    for r in record.ranks:
        t = r.temporal
        line: dict[str, Any] = {
            "rank": r.rank, "source": r.source, "rank_from": r.rank_from,
            "world_size": r.world_size, "backend": r.backend, "device": r.device,
            "error": r.error, "steps": len(r.steps) if r.error is None else None,
            "step_us": r.step_us, "cpu_us_per_step": r.cpu_us_per_step,
            "collective_us_per_step": r.collective_us_per_step,
            "kernels_per_step": r.kernels_per_step,
            "kernel_source": r.kernel_source if r.error is None else None,
            "attention_us_per_step": r.attention_us_per_step,
            "attention_share": r.attention_share, "sdpa_backend": r.sdpa_backend,
            "device_events": sum(d.count for d in r.device_totals) if r.device_totals else None,
            "device_us": sum(d.total_us for d in r.device_totals) if r.device_totals else None,
            "hta_span_us": t.span_us if t else None, "hta_compute_us": t.compute_us if t else None,
            "hta_non_compute_us": t.non_compute_us if t else None,
            "hta_idle_us": t.idle_us if t else None, "hta_overlap": t.overlap if t else None,
            "straggler_steps": sum(1 for s in record.steps if s.straggler == r.rank),
            "findings": sum(1 for f in record.findings
                            if r.rank in f.data.get("ranks", []) or f.data.get("rank") == r.rank),
            "created": record.created}
        line.update({f"{k}_us": v for k, v in r.categories_us.items()
                     if f"{k}_us" in RANK_COLUMNS})
        lines.append(line)
    return lines
