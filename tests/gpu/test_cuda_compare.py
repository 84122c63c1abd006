"""CUDA-only checks of the comparison (skipped without a CUDA device)."""

from __future__ import annotations

import pytest

from attnprof.measure.timer import TimingPlan
from attnprof.runner import Settings, compare
from attnprof.variants import REGISTRY
from attnprof.workload import Workload

pytestmark = pytest.mark.gpu

QUICK = Settings(plan=TimingPlan(warmup_s=0.02, min_time_s=0.05, min_samples=5))
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


def test_math_backend_is_slower_than_flash_on_bf16() -> None:
    record = compare(SMALL, ["sdpa-math", "sdpa-flash"], settings=QUICK)
    math, flash = record.result("sdpa-math"), record.result("sdpa-flash")
    assert math.peak_memory_bytes > flash.peak_memory_bytes  # S×S fp32 scores
