"""CUDA-only: a worker's memory cap (the caching allocator's share of the device) bounds the
variants, not attnprof's inputs and float64 reference, and a variant that runs out of it
leaves the others a fresh worker (skipped without a CUDA device)."""

from __future__ import annotations

import pytest

from attnprof.run.compare import compare
from attnprof.run.executors.process import ProcessExecutor
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings, TimingPlan

pytestmark = pytest.mark.gpu

QUICK = Settings(plan=TimingPlan(warmup_s=0.02, min_time_s=0.05, min_samples=5),
                 measure_ceilings=False)


def test_a_cuda_cap_bounds_the_variants_and_an_oom_stays_its_own() -> None:
    # naive holds 1·8·4096²·4 B = 512 MiB of scores (and copies); SDPA's fused kernel a few
    # MiB; the whole-matrix float64 reference would have needed 1 GiB per batch entry.
    workload = Workload(batch=1, heads=8, kv_heads=8, seq=4096, head_dim=64, device="cuda")
    record = compare(workload, ["naive", "sdpa"], settings=QUICK,
                     executor=ProcessExecutor(memory_limit_bytes=256 << 20))
    naive, sdpa = record.results
    assert naive.status == "oom", naive.reason
    assert sdpa.status == "ok", sdpa.reason
    assert sdpa.within_tolerance and sdpa.peak_memory_bytes is not None
    assert sdpa.peak_memory_bytes < 256 << 20
