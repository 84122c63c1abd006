"""Timing a step: warm-up, a sample count chosen from the warm-up, raw samples out.

On CPU a sample is the wall time of one call. On CUDA a sample is the device time between
two CUDA events around the call, and the CPU time spent issuing the call is kept beside it
(dispatch), because a short attention is often bound by the CPU launching kernels rather
than by the GPU running them. Between CUDA samples the L2 cache is flushed by overwriting a
buffer larger than it, outside the events, so one sample's inputs are not served warm from
L2 to the next (the same practice as ``triton.testing.do_bench``). At most
:data:`IN_FLIGHT` samples are queued ahead of the GPU: CUDA's launch queue holds about a
thousand launches, and once it is full every launch waits for the GPU, so the dispatch time
of a GPU-bound step would read as its device time.

A comparison does not sample its variants one after another: it warms every variant up,
then takes their samples in rounds, a slice of each variant's samples per round
(:func:`warm_up`, :func:`take_samples`). A machine whose speed drifts (turbo and thermal
limits on a laptop, neighbours on a shared host) then slows every variant alike instead of
whichever one happened to run during the slow minute, the remedy Google Benchmark offers
as random interleaving. :func:`interleaved_rounds` is that schedule, the one timing loop
every command uses: a comparison's variants, and a model run's step with attnprof's labels
off and on.

The clock is injectable so tests can drive the sample-count logic deterministically.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from attnprof.workload.settings import TimingPlan

Clock = Callable[[], float]

#: Bytes written between CUDA samples to evict L2 (H100 L2 is 50 MB, H200 60 MB; 256 MB is
#: ample).
L2_FLUSH_BYTES = 256 << 20
#: CUDA samples queued ahead of the GPU at most: enough that the GPU never waits for the CPU
#: between samples, few enough (a few launches each) to stay far below the launch queue's
#: depth, so that issuing a sample never blocks on a full queue (see the module doc).
IN_FLIGHT = 4


@dataclass
class Timing:
    """Raw timings of one variant, in milliseconds (first call in seconds)."""

    samples_ms: list[float]
    dispatch_ms: list[float]
    first_call_s: float
    warmup_calls: int
    device_timed: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Warmup:
    """What warming a step up found: its first call, and how many samples to take."""

    first_call_s: float
    calls: int
    samples: int


def time_step(step: Callable[[], object], *, device: str = "cpu",
              plan: TimingPlan | None = None, clock: Clock = time.perf_counter,
              sync: Callable[[], None] | None = None) -> Timing:
    """Warm ``step`` up, then sample it; CUDA devices are timed with events.

    The very first call is timed on its own (``first_call_s``): for compiled variants it is
    the compile, and it is never mixed into the latency samples.
    """
    warm = warm_up(step, device=device, plan=plan, clock=clock, sync=sync)
    samples, dispatch = take_samples(step, warm.samples, device=device, clock=clock)
    return Timing(samples, dispatch, warm.first_call_s, warm.calls,
                  device_timed=device.startswith("cuda"))


def warm_up(step: Callable[[], object], *, device: str = "cpu",
            plan: TimingPlan | None = None, clock: Clock = time.perf_counter,
            sync: Callable[[], None] | None = None) -> Warmup:
    """Time the first call alone, warm up for ``plan.warmup_s``, and size the sampling."""
    plan = plan or TimingPlan()
    if sync is None:
        from attnprof.measure.device import synchronize

        def sync() -> None:
            synchronize(device)

    t0 = clock()
    step()
    sync()
    first = clock() - t0

    calls, start = 0, clock()
    while calls < plan.min_warmup_calls or clock() - start < plan.warmup_s:
        step()
        calls += 1
    sync()
    per_call = (clock() - start) / calls
    return Warmup(first, calls, plan.sample_count(per_call))


def take_samples(step: Callable[[], object], n: int, *, device: str = "cpu",
                 clock: Clock = time.perf_counter) -> tuple[list[float], list[float]]:
    """``n`` samples of a warm step, ms, and the CPU time spent issuing each (dispatch)."""
    if device.startswith("cuda"):
        return _sample_cuda(step, n, device, clock)
    samples = []
    for _ in range(n):
        t0 = clock()
        step()
        samples.append((clock() - t0) * 1e3)
    return samples, list(samples)


def round_sizes(n: int, rounds: int) -> list[int]:
    """Split ``n`` samples over at most ``rounds`` rounds, as evenly as possible."""
    rounds = max(1, min(rounds, n))
    return [n // rounds + (1 if r < n % rounds else 0) for r in range(rounds)]


def interleaved_rounds(sizes: Sequence[Sequence[int]],
                       take: Callable[[int, int, int], bool]) -> bool:
    """Take every contender's samples in rounds: ``take(i, r, n)`` takes contender ``i``'s
    slice of ``n`` samples in round ``r`` (``sizes[i]``: its slices, :func:`round_sizes`).

    Round ``r`` starts with contender ``r`` (mod their number), so that no contender always
    follows the same one (what the one before leaves in the caches and the clocks). Returns
    True as soon as ``take`` returns True (stop: the rounds left are not taken)."""
    rounds = max((len(s) for s in sizes), default=0)
    count = len(sizes)
    for r in range(rounds):
        for i in [*range(r % count, count), *range(r % count)]:
            if r < len(sizes[i]) and take(i, r, sizes[i][r]):
                return True
    return False


def _sample_cuda(step: Callable[[], object], n: int, device: str,
                 clock: Clock) -> tuple[list[float], list[float]]:
    import torch

    # Events record on the current device's stream: make it the measured device's, or on
    # cuda:N they would time an idle stream of cuda:0.
    with torch.cuda.device(device):
        flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=device)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        dispatch = []
        for i in range(n):
            if i >= IN_FLIGHT:
                ends[i - IN_FLIGHT].synchronize()  # outside the clock and the events
            flush.zero_()
            starts[i].record()
            t0 = clock()
            step()
            dispatch.append((clock() - t0) * 1e3)
            ends[i].record()
        torch.cuda.synchronize(device)
        samples = [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
    return samples, dispatch
