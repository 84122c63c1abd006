"""Capture + analysis on a CUDA device (skipped without one).

Kernels must be linked to the ops that launched them, flash must be one kernel per forward,
the out-of-place mask must show as a copy kernel, and cuDNN's launch path must carry the
"occupancy not reported" note rather than a 0% that reads like an idle GPU.
"""

from __future__ import annotations

from typing import Any

import pytest

from attnprof.analysis.analyze import analyze_trace
from attnprof.record.trace_report import TraceReport
from attnprof.run.compare import compare
from attnprof.trace import load_trace
from attnprof.workload.problem import Workload
from attnprof.workload.settings import CaptureSpec, Settings, TimingPlan

pytestmark = pytest.mark.gpu

W = Workload(batch=2, heads=8, seq=512, head_dim=64, dtype="bfloat16", device="cuda")
VARIANTS = ["naive", "naive-inplace", "sdpa-math", "sdpa-flash", "sdpa-cudnn"]


@pytest.fixture(scope="module")
def cuda(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, TraceReport | None]]:
    settings = Settings(plan=TimingPlan(warmup_s=0.02, min_time_s=0.05, min_samples=5),
                        check_accuracy=False, trace_dir=tmp_path_factory.mktemp("cuda"),
                        trace=CaptureSpec(steps=2))
    record = compare(W, VARIANTS, settings=settings)
    return {r.variant: (r, analyze_trace(load_trace(r.trace), result=r, workload=W)
                        if r.trace else None) for r in record.results}


def _report(cuda: dict[str, tuple[Any, TraceReport | None]], variant: str) -> TraceReport:
    row, report = cuda[variant]
    if report is None:
        pytest.skip(f"{variant} did not run here: {row.reason}")
    return report


def test_kernels_are_linked_to_the_ops_that_launched_them(cuda: Any) -> None:
    for variant in ("naive", "sdpa-flash", "sdpa-math"):
        report = _report(cuda, variant)
        assert report.device == "cuda" and report.device_names
        (region,) = report.regions
        assert region.kernel_source == "kernels" and region.instances == 2
        assert region.device_us_per_forward and region.verdict in ("cpu-bound", "device-bound")
        for k in region.kernels:
            assert k.launched_by and k.launch_api, k.name
        assert report.unassigned_device_events == 0


def test_flash_is_one_kernel_per_forward(cuda: Any) -> None:
    region = _report(cuda, "sdpa-flash").regions[0]
    assert region.kernels_per_forward == 1
    (kernel,) = region.kernels
    assert kernel.family == "flash" and kernel.per_forward == 1
    assert "flash" in (kernel.call_path or "")
    assert kernel.grid is not None and kernel.registers_per_thread


def test_naive_copy_kernel_is_the_hidden_copy(cuda: Any) -> None:
    naive, inplace = _report(cuda, "naive"), _report(cuda, "naive-inplace")
    (copy,) = naive.findings_for("hidden-copy")
    assert copy.data["kernel_us_per_forward"] and any("kernel" in e for e in copy.evidence)
    assert not inplace.findings_for("hidden-copy")
    assert naive.regions[0].kernels_per_forward == inplace.regions[0].kernels_per_forward + 1


def test_math_backend_shows_its_reference_path(cuda: Any) -> None:
    report = _report(cuda, "sdpa-math")
    assert report.regions[0].sdpa_backend == "math"
    rules = {f.rule for f in report.findings}
    assert {"mask-rebuilt", "safe-softmax", "scores-materialised"} <= rules
    assert report.regions[0].kernels_per_forward > 5


def test_cudnn_occupancy_is_a_measurement_gap(cuda: Any) -> None:
    region = _report(cuda, "sdpa-cudnn").regions[0]
    attention = [k for k in region.kernels if k.family == "cudnn_attention"]
    assert attention, [k.name for k in region.kernels]
    for k in attention:
        if k.launch_api and k.launch_api.startswith("cuLaunchKernelEx") and not k.occupancy:
            assert k.note and "not reported by CUPTI" in k.note
