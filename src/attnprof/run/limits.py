"""Memory ceilings: the largest size of one field each variant fits within a budget.

"Fits" is attnprof's one definition (:mod:`attnprof.analysis.memory_fit`): one step ran
and its measured peak memory — the figure ``compare`` shows, inputs excluded — is within
the budget. Found on real runs: every probe measures one step of the variant at one size
in a fresh worker, so a size far beyond the budget is an ``oom`` probe in that worker (its
cap, :func:`~attnprof.analysis.memory_fit.safety_cap`, is well above the budget), never the
end of the search; a step that ran is judged by its measured peak. The search is a
bisection over the multiples of ``step`` between ``step`` and an upper end: the size at
which the step's output (and, in training, the gradients of q, k, v) alone exceed the
budget (certain not to fit, so never probed) or ``maximum`` (probed first when it is below
that). It takes at most ⌈log2(range)⌉ probes, one more when the upper end had to be probed,
and ends with a real measurement at the size found — at most ⌈log2(range)⌉ + 2 runs in
all, unless that measurement does not fit where its probe did: the search then goes on
below it, once. A probe that runs past ``probe_timeout_s`` counts as not fitting (in
time), and the result says so.

Beside each ceiling is the textbook estimate's (:func:`~attnprof.workload.costs.
textbook_memory_bytes`, the same quantity: the step's own allocations) and the ratio
between the two.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from attnprof.analysis import memory_fit
from attnprof.errors import UsageError
from attnprof.measure.device import memory_capacity_bytes
from attnprof.record.compare import VariantResult
from attnprof.record.limits import Ceiling, Probe
from attnprof.run.executors import get_executor
from attnprof.run.point import Point
from attnprof.variants import Variant
from attnprof.workload import costs
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings, TimingPlan

__all__ = ["FIELDS", "Ceiling", "Probe", "analytic_ceiling", "find_ceiling", "probe_budget",
           "probe_cap", "probe_of", "search_range"]

#: Fields a ceiling can be searched along.
FIELDS = ("seq", "batch")
#: One step, no accuracy check, no ceilings, and the C allocator as the system sets it
#: up: large blocks are mapped and unmapped as tensors come and go, so the worker's
#: address-space cap stays about what the variant holds, not what a heap kept for reuse
#: has fragmented (several times a step's peak).
PROBE = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.0, min_samples=1, max_samples=1,
                                 min_warmup_calls=1, rounds=1),
                 check_accuracy=False, measure_ceilings=False, cpu_allocator="system")

OnProbe = Callable[["Probe"], None]


def probe_of(size: int, row: VariantResult, budget: int) -> Probe:
    """The probe of ``row``, a run at ``size``, judged against ``budget``."""
    reason = memory_fit.over(row, budget) or row.reason
    return Probe(size, row.status, reason, row.peak_memory_bytes, memory_fit.fits(row, budget))


def search_range(base: Workload, field_name: str, budget: int, step: int,
                 maximum: int | None) -> tuple[int, int, bool]:
    """``(low, high, high_known_to_fail)``: sizes are multiples of ``step`` from ``step``;
    ``high`` is the first multiple whose step output (and gradients, in training) alone
    exceed ``budget`` unless ``maximum`` comes first."""
    def floor(size: int) -> int:
        return costs.step_floor_bytes(base.replace(**{field_name: size}))

    bound = _largest(lambda n: floor(n * step) <= budget) + 1  # in steps; fails
    if maximum is not None and maximum // step < bound:
        if maximum < step:
            raise UsageError(f"--max {maximum} is below --step {step}; raise --max")
        return step, (maximum // step) * step, False
    return step, bound * step, True


def analytic_ceiling(base: Workload, variant: Variant, field_name: str, budget: int,
                     step: int) -> int | None:
    """The largest multiple of ``step`` whose textbook memory fits ``budget``."""
    def within(n: int) -> bool:
        size = base.replace(**{field_name: n * step})
        return costs.textbook_memory_bytes(size, variant.materializes_scores) <= budget

    n = _largest(within)
    return n * step if n > 0 else None


def find_ceiling(base: Workload, variant: Variant, field_name: str, budget: int, *,
                 step: int, maximum: int | None = None, probe_timeout_s: float | None = None,
                 confirm: Settings | None = None, on_probe: OnProbe | None = None,
                 executor: str = "process",
                 executor_options: Mapping[str, Any] | None = None) -> Ceiling:
    """Bisect for the largest size of ``field_name`` at which ``variant`` runs one step of
    ``base`` within ``budget`` bytes, then measure it there (see the module doc).

    Every run is a point of ``executor`` (``process``, or ``ray`` with its
    ``executor_options``), each in a worker capped at :func:`probe_cap` and stopped after
    ``probe_timeout_s``: a size that does not fit must end its worker, not this process,
    so ``inline`` is refused."""
    if executor == "inline":
        raise UsageError("limits runs each probe in a capped worker, which the inline "
                         "executor has not; use --executor process (the default) or ray")
    low, high, high_fails = search_range(base, field_name, budget, step, maximum)
    ceiling = Ceiling(variant=variant.name, mode=base.mode, field=field_name,
                      budget_bytes=budget, search=(low, high),
                      analytic=analytic_ceiling(base, variant, field_name, budget, step))
    support = variant.supports(base.replace(**{field_name: low}))
    if not support.ok:
        ceiling.unsupported = support.reason
        return ceiling
    runner = get_executor(executor, timeout_s=probe_timeout_s, idle_timeout_s=None,
                          memory_limit_bytes=probe_cap(budget, base.device),
                          **(executor_options or {}))

    def run(size: int, settings: Settings) -> VariantResult:
        point = Point(workload=base.replace(**{field_name: size}).validate(),
                      variants=(variant.name,), settings=settings)
        (row,) = runner.run(point).results
        return row

    # Probes run on the confirming run's threads: a step's peak can depend on the pool
    # (per-thread buffers), and the ceiling must be what that run, and compare, measure.
    probing = PROBE if confirm is None else PROBE.replace(threads=confirm.threads)

    def probe(size: int) -> Probe:
        result = probe_of(size, run(size, probing), budget)
        ceiling.probes.append(result)
        if on_probe is not None:
            on_probe(result)
        return result

    if not high_fails:
        top = probe(high)
        if top.fits:
            low = high
        else:
            ceiling.first_failure = top
    else:
        ceiling.first_failure = Probe(high, "oom", "the step's output alone exceeds the "
                                      "budget (not run)")
    # The measured run keeps the probes' allocator state: under the reuse heap the same
    # size can need more address space than the cap that the probe fitted in.
    measured = (confirm or PROBE).replace(cpu_allocator=PROBE.cpu_allocator)
    for _attempt in range(2):  # a size whose measured run does not fit: search below it once
        while high - low > step:
            middle = low + ((high - low) // step // 2) * step
            tried = probe(middle)
            if tried.fits:
                low = middle
            else:
                high, ceiling.first_failure = middle, tried
        final = run(low, measured)
        ceiling.probes.append(probe_of(low, final, budget))
        if on_probe is not None:
            on_probe(ceiling.probes[-1])
        if ceiling.probes[-1].fits:
            ceiling.largest, ceiling.confirmed = low, final
            break
        ceiling.first_failure = ceiling.probes[-1]
        if low <= step:
            break
        low, high = step, low
    return ceiling


def probe_cap(budget: int, device: str) -> int:
    """The memory cap of a worker whose steps are judged against ``budget``: room above it
    for a step to run and be measured over it (:func:`~attnprof.analysis.memory_fit.
    safety_cap`), never more than the device has — a far larger step fails in its worker,
    not in the kernel's OOM killer."""
    return max(budget, min(memory_fit.safety_cap(budget), memory_capacity_bytes(device)))


def _largest(ok: Callable[[int], bool], limit: int = 1 << 40) -> int:
    """The largest n >= 1 with ``ok(n)`` for a monotone ``ok``; 0 when even 1 is not."""
    if not ok(1):
        return 0
    low, high = 1, 2
    while high < limit and ok(high):  # double until it does not fit ...
        low, high = high, high * 2
    while high - low > 1:  # ... then bisect between the last fit and the first miss
        middle = (low + high) // 2
        low, high = (middle, high) if ok(middle) else (low, middle)
    return low


def probe_budget(low: int, high: int, step: int) -> int:
    """The most runs :func:`find_ceiling` makes over ``low..high``: ⌈log2(range)⌉ + 2."""
    return math.ceil(math.log2(max(2, (high - low) // step))) + 2
