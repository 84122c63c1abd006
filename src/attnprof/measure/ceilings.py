"""This machine's ceilings, measured: what "0.05 TFLOP/s" is a fraction of.

A variant's achieved FLOP/s and bytes/s mean little alone; an expert asks how close they
are to what the hardware does at best. Datasheet peaks are rarely reached (clocks, power,
the library's best kernel), so attnprof measures two ceilings on the machine itself, in
the workload's dtype, with the same timer as the variants:

* **matmul**: one square ``torch.mm``, 2·n³ FLOPs per call — the best dense throughput the
  BLAS reaches here. n doubles from 256 until one call takes 10 ms (compute-bound) or n
  reaches 8192, so the yardstick costs well under a second even where a dtype is slow
  (bf16 on a CPU without AMX runs at a fraction of a GFLOP/s);
* **memory bandwidth**: one copy of a buffer far larger than the caches (256 MiB on a CPU,
  2 GiB on a GPU), counted as bytes read plus bytes written.

They are what the library reaches on this machine, not the silicon's limit; the record
keeps how they were measured beside them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from attnprof.measure.stats import summarize
from attnprof.measure.timer import time_step
from attnprof.spec.settings import TimingPlan

__all__ = ["Ceilings", "measure_ceilings"]

#: Short: the ceilings are a yardstick, measured once per run.
_PLAN = TimingPlan(warmup_s=0.05, min_time_s=0.2, min_samples=3, max_samples=200)
_COMPUTE_BOUND_S = 0.01
_MAX_N = 8192


@dataclass(frozen=True)
class Ceilings:
    """Best matmul FLOP/s and copy bytes/s measured here, and how."""

    matmul_flops_per_s: float
    bandwidth_bytes_per_s: float
    method: str


def measure_ceilings(device: str, dtype: str) -> Ceilings:
    """Time a large square matmul and a large copy on ``device`` in ``dtype``."""
    import torch

    copy_bytes = (2 << 30) if device.startswith("cuda") else (256 << 20)
    with torch.no_grad():
        n, mm_ms = _matmul_ms(device, getattr(torch, dtype))  # canonical names are torch's
        copy_ms = _copy_ms(device, copy_bytes)
    return Ceilings(
        matmul_flops_per_s=2 * n**3 / (mm_ms / 1e3),
        bandwidth_bytes_per_s=2 * copy_bytes / (copy_ms / 1e3),
        method=(f"torch.mm {n}x{n} {dtype}, 2n^3 FLOPs; copy of {copy_bytes >> 20} MiB, "
                "read + write; medians"),
    )


def _matmul_ms(device: str, dtype: Any) -> tuple[int, float]:
    """The size n at which one matmul is compute-bound (or the largest), and its median."""
    import torch

    from attnprof.measure.device import synchronize

    n = 256
    while True:
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        torch.mm(a, b)  # the first call may pick or load a kernel
        synchronize(device)
        t0 = time.perf_counter()
        torch.mm(a, b)
        synchronize(device)
        if time.perf_counter() - t0 >= _COMPUTE_BOUND_S or n >= _MAX_N:
            break
        n *= 2
    timing = time_step(lambda: torch.mm(a, b), device=device, plan=_PLAN)
    return n, summarize(timing.samples_ms).median


def _copy_ms(device: str, nbytes: int) -> float:
    import torch

    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    timing = time_step(lambda: dst.copy_(src), device=device, plan=_PLAN)
    return summarize(timing.samples_ms).median
