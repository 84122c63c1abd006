"""How noisy the moment of a model trace was, from its capture's metadata, and the findings
that say so when it was: a pure pass over the trace's ``attnprof`` block.

A trace records the step as it ran then. While other processes held the CPUs, or while the
profiler's own allocations made the step fault in fresh pages, the step had another shape
than a quiet untraced one (:mod:`attnprof.knowledge.capture_noise`): the figures are exact
for that moment, so the attribution keeps them, and says what the moment was.
"""

from __future__ import annotations

from typing import Any

from attnprof.knowledge.capture_noise import (
    CONTENDED,
    EXTRA_FAULT_BYTES,
    STEP_SHARE_SPREAD,
    contended,
    faulted,
    noise_phrases,
)
from attnprof.record.finding import Finding

__all__ = ["capture_noise", "capture_noise_findings", "median", "own_threads",
           "unreliable_reason"]


def capture_noise(block: dict[str, Any] | None) -> tuple[float | None, float | None]:
    """The traced steps' median wait for a CPU (a fraction of their wall time) and median
    page-fault bytes beyond an untraced step's; ``None`` for what the block lacks."""
    block = block or {}
    waits = _numbers(block.get("cpu_wait"))
    faults = _numbers(block.get("page_faults"))
    untraced = _numbers([block.get("page_faults_untraced")])
    page = _numbers([block.get("page_size")])
    extra = None
    if faults and untraced and page:
        extra = max(median(faults) - untraced[0], 0.0) * page[0]
    return (median(waits) if waits else None), extra


def own_threads(block: dict[str, Any] | None) -> tuple[int, int] | None:
    """``(threads, cpus)`` when the capture ran more intra-op threads than CPUs (its
    ``oversubscribed`` entry), else ``None``."""
    found = (block or {}).get("oversubscribed")
    if (isinstance(found, list) and len(found) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in found)
            and found[0] > found[1]):
        return found[0], found[1]
    return None


def _numbers(values: Any) -> list[float]:
    if not isinstance(values, list):
        return []
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def capture_noise_findings(cpu_wait: float | None, extra_fault_bytes: float | None,
                           region: str, *, own: tuple[int, int] | None = None
                           ) -> list[Finding]:
    """A warning for a contended trace and one for a trace whose steps faulted pages that
    an untraced step does not. ``own``: the capture's ``(threads, cpus)`` when it ran more
    threads than CPUs (:func:`own_threads`), whose wait is its own, not other processes'."""
    found = []
    if contended(cpu_wait):
        assert cpu_wait is not None
        if own is None:  # other processes' load
            cause, waits, kind = ("other processes were using the CPUs", "under contention "
                                  "every parallel op waits", "a contended")
            fix = ("re-run when the machine is quiet, or give the run cores of its own "
                   "(taskset, or fewer torch threads than idle cores)")
            data: dict[str, float] = {"cpu_wait": cpu_wait}
        else:  # more threads than CPUs: the run's own
            cause = (f"its {own[0]} intra-op threads outnumber the {own[1]} CPUs it may use "
                     "and take turns")
            waits, kind = "every parallel op then waits", "an oversubscribed"
            fix = f"run with --threads {own[1]} or fewer"
            data = {"cpu_wait": cpu_wait, "threads": own[0], "cpus": own[1]}
        found.append(Finding(
            rule="contended-trace", severity="warning", region=region,
            title=f"the traced steps waited for a CPU {cpu_wait:.0%} of their time",
            evidence=[f"the process's threads were runnable but not running for "
                      f"{cpu_wait:.0%} of each traced step's wall time (median; quiet is "
                      f"under {CONTENDED:.0%}): {cause}",
                      f"{waits} for its parked threads, so ops with many short parallel "
                      f"regions grow more than long matmuls: the shares are those of {kind} "
                      "step"],
            fix=fix, data=data))
    if faulted(extra_fault_bytes):
        assert extra_fault_bytes is not None
        mib = extra_fault_bytes / 2**20
        found.append(Finding(
            rule="traced-page-faults", severity="warning", region=region,
            title=f"each traced step faulted {mib:.0f} MiB of pages an untraced step does not",
            evidence=[f"median {mib:.1f} MiB of minor page faults per traced step beyond an "
                      f"untraced step's (over {EXTRA_FAULT_BYTES / 2**20:.0f} MiB counts)",
                      "the profiler's buffers share the heap with the step's tensors; "
                      "large outputs then come from fresh pages, so ops that allocate them "
                      "(an eager core's score matrices) look slower than they are"],
            fix="trace again in the same process (the heap keeps what it grew), or trace "
                "more steps and read the medians",
            data={"extra_fault_bytes": extra_fault_bytes}))
    return found


def unreliable_reason(cpu_wait: float | None, extra_fault_bytes: float | None,
                      step_shares: list[float]) -> str | None:
    """Why a capture's shares cannot be trusted, in words; ``None`` when nothing says so:
    its steps waited for a CPU or faulted pages an untraced step does not
    (:mod:`attnprof.knowledge.capture_noise`), or they disagree on attention's share."""
    said = noise_phrases(cpu_wait, extra_fault_bytes)
    if step_shares and max(step_shares) - min(step_shares) > STEP_SHARE_SPREAD:
        said.append(f"the traced steps' attention shares ranged {min(step_shares):.0%} to "
                    f"{max(step_shares):.0%}")
    return "; ".join(said) or None


def median(values: Any) -> float:
    """:func:`statistics.median`, imported only when a model's trace is attributed: the
    module (with ``fractions``) would cost every ``attnprof analyze`` 4 ms of start-up."""
    import statistics

    return statistics.median(values)
