"""This machine's ceilings, measured: what "0.05 TFLOP/s" is a fraction of.

A variant's achieved FLOP/s and bytes/s mean little alone; an expert asks how close they
are to what the hardware does at best. Datasheet peaks are rarely reached (clocks, power,
the library's best kernel), so attnprof measures two ceilings on the machine itself, in
the workload's dtype, with the same timer as the variants:

* **matmul**: one square ``torch.mm``, 2·n³ FLOPs per call — the best dense throughput the
  BLAS reaches here. n doubles from 256 until a call takes 10 ms (compute-bound) or n
  reaches 8192, so the yardstick costs well under a second even where a dtype is slow
  (bf16 on a CPU without AMX runs at a fraction of a GFLOP/s). Both the decision and the
  rate must survive a busy machine: whether n is compute-bound is decided on the fastest
  of a few calls, not on one (one descheduled call at n=256 used to end the search there
  and report 0.002 TFLOP/s, so that variants read 1943% of it), and the ceiling is the
  best rate seen at any size, since no size can go faster than the machine. Both use a
  size's *fastest* call, not its median: on a machine shared by more threads than CPUs
  every one of a few calls can be descheduled, and the median at n=256 read 0.0006
  TFLOP/s where the BLAS does 0.2 — a ceiling 300x low, under which measured variants
  beat their own roofline bound (``attnprof project``'s self-check). No call runs
  faster than the hardware, so the fastest is the least disturbed;
* **memory bandwidth**: one copy of a buffer far larger than the caches (256 MiB on a CPU,
  2 GiB on a GPU), counted as bytes read plus bytes written.

They are what the library reaches on this machine, not the silicon's limit; the record
keeps how they were measured beside them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from attnprof.knowledge.capture_noise import contended
from attnprof.measure.contention import cpu_wait_s, oversubscribed, wait_fraction
from attnprof.measure.timer import take_samples, time_step
from attnprof.record.environment import Ceilings as RecordCeilings
from attnprof.workload.settings import TimingPlan

__all__ = ["Ceilings", "measure_ceilings"]

#: Short: the ceilings are a yardstick, measured once per run.
_PLAN = TimingPlan(warmup_s=0.05, min_time_s=0.2, min_samples=3, max_samples=200)
_COMPUTE_BOUND_S = 0.01
_MAX_N = 8192
#: Calls per size whose fastest decides whether the size is compute-bound.
_PROBE_CALLS = 5


@dataclass(frozen=True)
class Ceilings:
    """Best matmul FLOP/s and copy bytes/s measured here, and how."""

    matmul_flops_per_s: float
    bandwidth_bytes_per_s: float
    method: str

    def as_record(self, measured: str | None = None) -> RecordCeilings:
        """The record's form (TFLOP/s, GB/s); ``measured``: when, if not in this run."""
        return RecordCeilings(matmul_tflops_per_s=self.matmul_flops_per_s / 1e12,
                              bandwidth_gbytes_per_s=self.bandwidth_bytes_per_s / 1e9,
                              method=self.method, measured=measured)


def measure_ceilings(device: str, dtype: str) -> Ceilings:
    """Time a large square matmul and a large copy on ``device`` in ``dtype``."""
    import torch

    copy_bytes = (2 << 30) if device.startswith("cuda") else (256 << 20)
    waited, t0 = cpu_wait_s(), time.perf_counter()
    with torch.no_grad():
        n, mm_rate = _matmul(device, getattr(torch, dtype))  # canonical names are torch's
        copy_ms = _copy_ms(device, copy_bytes)
    wait = wait_fraction(waited, cpu_wait_s(), time.perf_counter() - t0)
    # A busy machine's rates make every share look better than it is: say so beside them.
    busy = ""
    if wait is not None and contended(wait):
        own = oversubscribed()
        who = (f"its {own[0]} threads took turns on {own[1]} CPUs" if own is not None
               else "other processes held the CPUs")
        busy = (f"; measured while {who} (its threads waited for a CPU {wait:.0%} of the "
                "time): shares of these are too high")
    return Ceilings(
        matmul_flops_per_s=mm_rate,
        bandwidth_bytes_per_s=2 * copy_bytes / (copy_ms / 1e3),
        method=(f"torch.mm {n}x{n} {dtype}, 2n^3 FLOPs, the best size up to compute-bound; "
                f"copy of {copy_bytes >> 20} MiB, read + write; fastest calls{busy}"),
    )


def _matmul(device: str, dtype: Any,
            time_calls: Callable[[int, int], list[float]] | None = None) -> tuple[int, float]:
    """The size n with the best FLOP/s seen, and that rate, doubling n from 256 until a
    call is compute-bound (the fastest of a few calls) or n is the largest.

    ``time_calls(n, count)`` returns ``count`` timings (seconds) of one n×n matmul;
    injectable, so the search itself can be tested on a scripted clock.
    """
    time_calls = time_calls or _matmul_timer(device, dtype)
    best_n, best_rate = 0, 0.0
    n = 256
    while True:
        per_call = min(time_calls(n, _PROBE_CALLS))
        if n >= _MAX_N or per_call >= _COMPUTE_BOUND_S:
            break
        best_n, best_rate = max((best_n, best_rate), (n, _rate(n, per_call)),
                                key=lambda pair: pair[1])
        n *= 2
    samples = time_calls(n, _PLAN.sample_count(per_call))
    steady = _rate(n, min(samples))
    return max((best_n, best_rate), (n, steady), key=lambda pair: pair[1])


def _rate(n: int, seconds: float) -> float:
    return 2 * n**3 / seconds if seconds > 0 else 0.0


def _matmul_timer(device: str, dtype: Any) -> Callable[[int, int], list[float]]:
    """``time_calls(n, count)`` for real: n×n matrices made (and a first, untimed call run)
    once per n."""
    import torch

    from attnprof.measure.device import synchronize

    made: dict[int, tuple[Any, Any]] = {}

    def time_calls(n: int, count: int) -> list[float]:
        if n not in made:
            made.clear()  # one size at a time in memory
            a = torch.randn(n, n, device=device).to(dtype)
            b = torch.randn(n, n, device=device).to(dtype)
            torch.mm(a, b)  # the first call may pick or load a kernel
            synchronize(device)
            made[n] = (a, b)
        a, b = made[n]
        samples_ms, _ = take_samples(lambda: torch.mm(a, b), count, device=device)
        return [ms / 1e3 for ms in samples_ms]

    return time_calls


def _copy_ms(device: str, nbytes: int) -> float:
    import torch

    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    timing = time_step(lambda: dst.copy_(src), device=device, plan=_PLAN)
    return min(timing.samples_ms)  # the fastest copy: the least disturbed (see _matmul)
