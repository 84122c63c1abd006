"""16-bit inputs on CPU: the math backend upcasts to fp32, the fused flash kernel does not."""

from __future__ import annotations

import pytest

from attnprof.analysis.analyze import analyze_trace
from attnprof.record.trace_report import TraceReport
from attnprof.run.compare import compare
from attnprof.trace import load_trace
from attnprof.workload.problem import Workload
from attnprof.workload.settings import CaptureSpec, Settings, TimingPlan

BF16 = Workload(batch=1, heads=2, seq=64, head_dim=16, dtype="bfloat16", device="cpu")


@pytest.fixture(scope="module")
def bf16_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TraceReport]:
    settings = Settings(
        plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=2, max_samples=3,
                        min_warmup_calls=1),
        measure_memory=False, check_accuracy=False, measure_ceilings=False,
        trace_dir=tmp_path_factory.mktemp("bf16"), trace=CaptureSpec(steps=1))
    record = compare(BF16, ["sdpa-math", "sdpa-flash"], settings=settings)
    return {r.variant: analyze_trace(load_trace(r.trace)) for r in record.results}


def test_math_backend_upcasts_bf16_inputs(bf16_reports: dict[str, TraceReport]) -> None:
    (upcast,) = bf16_reports["sdpa-math"].findings_for("fp32-upcast")
    assert upcast.data["input_dtype"] == "c10::BFloat16"
    assert upcast.data["casts_per_forward"] >= 3  # q, k and v
    assert upcast.data["fp32_gemms_per_forward"] >= 2  # q·kᵀ and p·v
    assert any("→ float" in e for e in upcast.evidence)


def test_flash_keeps_bf16_and_its_scratch_is_not_scores(
        bf16_reports: dict[str, TraceReport]) -> None:
    flash = bf16_reports["sdpa-flash"]
    assert not flash.findings_for("fp32-upcast")
    assert not flash.findings_for("scores-materialised")


def test_cpu_ops_take_their_dtype_from_their_own_inputs(
        bf16_reports: dict[str, TraceReport]) -> None:
    # A CPU op's name states no precision: the recorded input types do, and the report says
    # where the dtype came from. The math path's GEMMs run on the upcast fp32 copies.
    (flash,) = [k for k in bf16_reports["sdpa-flash"].regions[0].kernels
                if k.family == "cpu_flash"]
    assert (flash.dtype, flash.dtype_source) == ("bf16", "launching op")
    assert flash.short.endswith("· bf16 (launching op)")
    math_bmm = [k for k in bf16_reports["sdpa-math"].regions[0].kernels if k.name == "aten::bmm"]
    assert math_bmm and all((k.dtype, k.dtype_source) == ("fp32", "launching op")
                            for k in math_bmm)
