"""How a worker process ended, and what that did to the work it was running: shared by
the point executor (:mod:`attnprof.run.executors.process`) and the model runs in workers
(:mod:`attnprof.run.executors.model_workers`)."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any

from attnprof.formatting import one_line
from attnprof.record.compare import CompareRecord, ProfileRecord, Status, VariantResult

__all__ = ["Attempt", "how_it_ended"]


@dataclass
class Attempt:
    """How one worker ended: what it last said, and how it exited."""

    phase: tuple[str, str] | None = None  # (variant, phase) last reported
    done: bool = False
    usage_error: str | None = None
    interrupted: bool = False
    #: The stop (Ctrl-C, SIGTERM) that reached this process while the worker ran.
    stop: KeyboardInterrupt | None = None
    traceback: str | None = None
    exitcode: int | None = None
    timed_out: str | None = None  # why it was stopped, if it was
    #: (phase, seconds) when it was killed for a variant past --variant-timeout in a phase.
    over_limit: tuple[str, float] | None = None
    #: Each variant's row as it stood after its last finished phase (the worker's ``K``).
    kept: dict[str, VariantResult] = field(default_factory=dict)
    oom_killed: bool = False
    stderr_tail: str = ""
    #: The record type the worker sends (``R``): a point's, or a model run's.
    record_type: Any = CompareRecord | ProfileRecord


def how_it_ended(ended: Attempt) -> tuple[Status, str]:
    """The row status of what a worker's end did to the work it was running, and how it
    ended, in words."""
    code = ended.exitcode
    if ended.over_limit:
        phase, limit = ended.over_limit
        return "timeout", (f"did not finish {phase} within {limit:g} s (--variant-timeout) "
                           "and did not stop at its own time limit (a hang inside native "
                           "code, or the alarm blocked or ignored): the worker was killed")
    if ended.timed_out:
        return "timeout", f"the worker {ended.timed_out} and was stopped"
    if ended.oom_killed:
        return "oom", "the kernel's OOM killer ended the worker (SIGKILL)"
    if ended.traceback:
        last = ended.traceback.strip().splitlines()[-1]
        ended.stderr_tail = ""  # the traceback says it better
        return "error", f"the worker failed: {one_line(last)}"
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return "crashed", f"the worker was killed by {name} (signal {-code})"
    return "crashed", f"the worker exited with status {code} before finishing"
