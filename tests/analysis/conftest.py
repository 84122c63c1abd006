"""Fixtures for the analysis tests: real CPU captures of small workloads, and public traces.

One comparison run captures every variant the tests need, once per session (flex-eager's
dynamo trace is the slow part); each trace is then analysed twice: with the workload (as
``attnprof profile`` does) and from the trace alone (as ``attnprof analyze`` does on a
foreign trace, where rules must fall back to shapes).
"""

from __future__ import annotations

import functools
import gzip
import json
import math
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from attnprof.analysis.analyze import analyze_trace
from attnprof.record.compare import RunRecord
from attnprof.record.trace_report import TraceReport
from attnprof.run.compare import compare
from attnprof.trace import Trace, load_trace
from attnprof.workload.problem import Workload
from attnprof.workload.settings import CaptureSpec, Settings, TimingPlan

#: B=1, H=2 sharing one K/V head (so repeat_kv and enable_gqa have work), S=64, D=16.
WORKLOAD = Workload(batch=1, heads=2, kv_heads=1, seq=64, head_dim=16, device="cpu")
VARIANTS = ("naive", "naive-inplace", "sdpa-math", "sdpa-flash", "flex-eager", "gqa-repeat-kv")
STEPS = 2


@pytest.fixture(scope="session")
def workload() -> Workload:
    """The workload of the CPU captures."""
    return WORKLOAD


@pytest.fixture(scope="session")
def steps() -> int:
    """Profiled steps (forwards) per CPU capture."""
    return STEPS


@pytest.fixture(scope="session")
def raw_summary() -> Any:
    """``raw_summary(path)``: independent device-event counts (see :func:`raw_device_summary`)."""
    return raw_device_summary


@pytest.fixture(scope="session")
def cpu_record(tmp_path_factory: pytest.TempPathFactory) -> RunRecord:
    """One run of :data:`VARIANTS` on :data:`WORKLOAD`, each with a 2-step trace."""
    settings = Settings(
        plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=2, max_samples=3,
                        min_warmup_calls=1),
        measure_memory=False, check_accuracy=False, measure_ceilings=False,
        trace_dir=tmp_path_factory.mktemp("traces"), trace=CaptureSpec(steps=STEPS),
    )
    record = compare(WORKLOAD, list(VARIANTS), settings=settings)
    assert all(r.status == "ok" for r in record.results), [r.reason for r in record.results]
    return record


@pytest.fixture(scope="session", params=["workload", "trace-only"])
def cpu_reports(request: pytest.FixtureRequest, cpu_record: RunRecord) -> dict[str, TraceReport]:
    """variant -> report, analysed with the workload known, or from the trace alone."""
    known = request.param == "workload"
    reports = {}
    for row in cpu_record.results:
        trace = load_trace(row.trace)
        if not known:  # as a foreign trace: no attnprof metadata, no run record
            trace = Trace(events=trace.events,
                          meta=msgspec.structs.replace(trace.meta, attnprof=None))
        reports[row.variant] = analyze_trace(trace, result=row if known else None,
                                             workload=WORKLOAD if known else None)
    return reports


@pytest.fixture(scope="session")
def load_public(public_traces: Path) -> Any:
    """``load_public(name)``: (trace, report) of a public trace, loaded and analysed once."""

    @functools.cache
    def load(name: str) -> tuple[Any, TraceReport]:
        trace = load_trace(public_traces / name)
        return trace, analyze_trace(trace)

    return load


_DEVICE = {"kernel", "gpu_memcpy", "gpu_memset"}
_RUNTIME = {"cuda_runtime", "cuda_driver"}
_STEP = re.compile(r"^ProfilerStep#\d+$")


@functools.cache
def raw_device_summary(path: Path) -> dict[str, Any]:
    """Independent device-event counts and fsum durations from plain ``json.load``.

    ``total``: every complete device event; ``per_step``: those whose launch (the runtime
    event with the same correlation) lies inside a ``ProfilerStep#N`` annotation.
    """
    with gzip.open(path, "rb") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    device = [e for e in events if e.get("ph") == "X" and e.get("cat") in _DEVICE]
    launches = {e["args"]["correlation"]: e["ts"] for e in events
                if e.get("ph") == "X" and e.get("cat") in _RUNTIME
                and "correlation" in e.get("args", {})}
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if e.get("cat") == "user_annotation" and _STEP.match(str(e.get("name", "")))]
    in_steps = []
    for e in device:
        ts = launches.get(e.get("args", {}).get("correlation"))
        if ts is not None and any(a <= ts <= b for a, b in steps):
            in_steps.append(e["dur"])
    return {
        "count": len(device),
        "total_us": math.fsum(e["dur"] for e in device),
        "steps": len(steps),
        "step_count": len(in_steps),
        "step_us": math.fsum(in_steps),
    }
