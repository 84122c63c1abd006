"""Peak memory of one step, and the ATen ops it dispatched.

* CUDA: the caching allocator's peak (``max_memory_allocated``) over one step, minus what
  was allocated before it — exactly the variant's own transient memory.
* CPU: the CPU allocator has no peak counter, so one step runs under ``torch.profiler`` with
  ``profile_memory=True`` and the peak of the running sum of its allocation/free events is
  taken. That counts every tensor the step allocates (scores, copies, output), which is the
  honest figure; Python objects and the allocator's own caching are not in it.

The same profiled step yields the names of the ops that ran, from which the runner reads
which SDPA backend was chosen, and, asked for (``shapes``), the shapes and dtypes of
every op, from which its traffic is modelled (:mod:`attnprof.knowledge.op_traffic`):
no extra call of the step.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from attnprof.knowledge.op_traffic import OpShapes, Traffic, traffic


@dataclass(frozen=True)
class MemoryProfile:
    """Peak transient bytes of one step, how they were measured, and the ops seen."""

    peak_bytes: int
    method: str
    op_names: tuple[str, ...]
    #: The bytes the step's ops read and wrote, modelled from their recorded shapes
    #: (``None``: shapes not recorded, or a step the model cannot see, such as a compiled
    #: graph's).
    traffic: Traffic | None = None


#: The annotation around the measured call of :func:`profile_step` (not a region: no
#: ``attnprof::`` prefix).
_MEASURED = "attnprof-measured-call"


def profile_step(step: Callable[[], object], device: str, *,
                 settle: bool = False, shapes: bool = False) -> MemoryProfile:
    """Run ``step`` once (or twice on CUDA) and measure its peak memory and ops.

    ``settle``: for a step that frees what earlier calls allocated (decode replaces its
    KV cache's tensors as they grow). The profiler knows the size only of blocks
    allocated while it records, so it drops the free of an older block (c10 says "Memory
    block of unknown size was allocated before the profiling started") and the peak
    would count the replacement without the release — the whole cache. The step is then
    called once more first in the same session, and only the second call is measured:
    every block it frees was allocated under the profiler. ``shapes``: record every op's
    input shapes and dtypes too, and model the step's traffic from them."""
    # The autograd profiler torch.profiler.profile wraps, for the same CPU events:
    # torch.profiler's start asks ``hasattr(torch, "_inductor")``, which imports
    # torch._inductor and torch._dynamo — two seconds of every process's first
    # measurement, for a check about CUDA graphs this measurement never uses.
    from torch.autograd.profiler import profile, record_function

    with filtered_kineto_stderr(unknown_frees=settle), profile(
            use_cpu=True, use_kineto=True, record_shapes=shapes,
            profile_memory=not device.startswith("cuda")) as prof:
        if settle:
            step()
        with record_function(_MEASURED):
            step()
    events = prof.kineto_results.events()
    window = next((e for e in events if e.name() == _MEASURED), None)
    if window is not None:
        lo, hi = window.start_ns(), window.end_ns()
        events = [e for e in events if lo <= e.start_ns() <= hi]
    names = tuple(dict.fromkeys(e.name() for e in events if e.name().startswith("aten::")))
    moved = traffic(OpShapes(e.name(), e.shapes(), e.dtypes(), e.start_ns(), e.end_ns(),
                             e.start_thread_id())
                    for e in events) if shapes else None
    if device.startswith("cuda"):
        return MemoryProfile(_cuda_peak(step, device), "cuda-allocator-peak", names, moved)
    running = peak = 0
    for e in sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns()):
        running += e.nbytes()
        peak = max(peak, running)
    return MemoryProfile(peak, "profiler-memory-events", names, moved)


def _cuda_peak(step: Callable[[], object], device: str) -> int:
    import torch

    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    step()
    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device) - before)


#: What c10's CPU allocator logs (to fd 2) when a profiled call frees a block allocated
#: before the profiler started.
UNKNOWN_FREE = b"Memory block of unknown size was allocated before the profiling started"


@contextlib.contextmanager
def filtered_kineto_stderr(*, unknown_frees: bool = False) -> Iterator[None]:
    """Drop Kineto's ``USDT:`` start/stop lines, which it prints straight to fd 2.

    They are not warnings and would break the terminal table; every other line written to
    stderr meanwhile is passed through once the block ends. ``unknown_frees``: the
    caller settles a step that frees older blocks (see :func:`profile_step`), so c10's
    line about such a free concerns a call that is not measured, and is dropped too.
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
                    if not ln.startswith(b"USDT:")
                    and not (unknown_frees and UNKNOWN_FREE in ln)]
            if kept:
                os.write(fd, b"".join(kept))
