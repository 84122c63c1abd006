"""Peak memory of one step, and the ATen ops it dispatched.

* CUDA: the caching allocator's peak (``max_memory_allocated``) over one step, minus what
  was allocated before it — exactly the variant's own transient memory.
* CPU: the CPU allocator has no peak counter, so one step runs under ``torch.profiler`` with
  ``profile_memory=True`` and the peak of the running sum of its allocation/free events is
  taken. That counts every tensor the step allocates (scores, copies, output), which is the
  honest figure; Python objects and the allocator's own caching are not in it.

The same profiled step yields the names of the ops that ran, from which the runner reads
which SDPA backend was chosen.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class MemoryProfile:
    """Peak transient bytes of one step, how they were measured, and the ops seen."""

    peak_bytes: int
    method: str
    op_names: tuple[str, ...]


def profile_step(step: Callable[[], object], device: str) -> MemoryProfile:
    """Run ``step`` once (or twice on CUDA) and measure its peak memory and ops."""
    from torch.profiler import ProfilerActivity, profile

    with filtered_kineto_stderr(), profile(activities=[ProfilerActivity.CPU],
                                           profile_memory=not device.startswith("cuda")) as prof:
        step()
    events = prof.profiler.kineto_results.events()
    names = tuple(dict.fromkeys(e.name() for e in events if e.name().startswith("aten::")))
    if device.startswith("cuda"):
        return MemoryProfile(_cuda_peak(step, device), "cuda-allocator-peak", names)
    running = peak = 0
    for e in sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns()):
        running += e.nbytes()
        peak = max(peak, running)
    return MemoryProfile(peak, "profiler-memory-events", names)


def _cuda_peak(step: Callable[[], object], device: str) -> int:
    import torch

    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    step()
    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device) - before)


@contextlib.contextmanager
def filtered_kineto_stderr() -> Iterator[None]:
    """Drop Kineto's ``USDT:`` start/stop lines, which it prints straight to fd 2.

    They are not warnings and would break the terminal table; every other line written to
    stderr meanwhile is passed through once the block ends.
    """
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr replaced (pytest capture, IDEs)
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            kept = [ln for ln in tmp.read().splitlines(keepends=True)
                    if not ln.startswith(b"USDT:")]
            if kept:
                os.write(fd, b"".join(kept))
