"""CUDA-only checks of the comparison (skipped without a CUDA device)."""

from __future__ import annotations

import pytest

from attnprof.run.compare import compare
from attnprof.variants import REGISTRY
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings, TimingPlan

pytestmark = pytest.mark.gpu

QUICK = Settings(plan=TimingPlan(warmup_s=0.02, min_time_s=0.05, min_samples=5),
                 measure_ceilings=False)
SMALL = Workload(batch=2, heads=8, seq=512, head_dim=64, dtype="bfloat16", device="cuda")


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_variant_on_cuda(name: str) -> None:
    (row,) = compare(SMALL, [name], settings=QUICK).results
    if row.status == "unsupported":
        assert row.reason, "a refusal must say why"
        return
    assert row.status == "ok", row.reason
    assert row.timing == "cuda-events"
    assert row.cpu_dispatch_ms is not None and row.device_ms is not None
    assert row.peak_memory_method == "cuda-allocator-peak"
    assert row.within_tolerance, (row.max_abs_error, row.tolerance)


def test_fused_backends_run_on_a_bf16_workload() -> None:
    record = compare(SMALL, ["sdpa", "sdpa-flash", "sdpa-efficient"], settings=QUICK)
    assert record.result("sdpa-flash").sdpa_backend == "flash"
    assert record.result("sdpa-efficient").sdpa_backend == "memory-efficient"
    assert record.result("sdpa").status == "ok"


def test_refused_backend_reason_is_pytorchs_own_words() -> None:
    # Flash attention takes only 16-bit inputs; PyTorch explains in a warning.
    (row,) = compare(SMALL.replace(dtype="float32"), ["sdpa-flash"], settings=QUICK).results
    assert row.status == "unsupported"
    assert row.reason.startswith("PyTorch refused: ")
    assert "Flash attention" in row.reason or "flash" in row.reason.lower()
    # Flash's own failed check, not the other backends' "runtime disabled" by the pin.
    assert "dtype" in row.reason and "runtime disabled" not in row.reason, row.reason


def test_flash_reaches_a_sane_share_of_the_measured_matmul_ceiling() -> None:
    settings = Settings(plan=QUICK.plan, check_accuracy=False)
    record = compare(SMALL.replace(batch=8, heads=16, seq=2048, head_dim=128), ["sdpa-flash"],
                     settings=settings)
    ceilings, (row,) = record.ceilings, record.results
    # An H200 does several hundred dense bf16 TFLOP/s and several TB/s of copies.
    assert ceilings is not None and ceilings.matmul_tflops_per_s > 50
    assert ceilings.bandwidth_gbytes_per_s > 500
    assert row.flops_of_ceiling is not None and 0.05 < row.flops_of_ceiling < 1.2


def test_math_backend_is_slower_than_flash_on_bf16() -> None:
    record = compare(SMALL, ["sdpa-math", "sdpa-flash"], settings=QUICK)
    math, flash = record.result("sdpa-math"), record.result("sdpa-flash")
    assert math.peak_memory_bytes > flash.peak_memory_bytes  # S×S fp32 scores


def test_dispatch_of_a_gpu_bound_step_is_not_its_device_time() -> None:
    # One ~0.3 ms flash kernel issued in ~0.03 ms: 600 samples in one round would fill
    # CUDA's launch queue (~1000 launches) unless the timer keeps few samples in flight, and
    # from then on every launch would wait for the GPU and read as dispatch time.
    w = SMALL.replace(batch=8, heads=16, seq=2048, head_dim=128)
    plan = TimingPlan(warmup_s=0.05, min_time_s=0.2, min_samples=600, max_samples=600,
                      rounds=1)
    settings = Settings(plan=plan, check_accuracy=False)
    (row,) = compare(w, ["sdpa-flash"], settings=settings).results
    assert row.status == "ok", row.reason
    assert row.latency_ms is not None and row.latency_ms.count == 600
    assert row.cpu_dispatch_ms is not None and row.device_ms is not None
    assert row.cpu_dispatch_ms < 0.5 * row.device_ms, (row.cpu_dispatch_ms, row.device_ms)
