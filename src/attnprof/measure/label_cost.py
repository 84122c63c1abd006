"""What one of attnprof's labels costs while the profiler records: a calibration.

A capture of the user's own loop cannot time the loop without its labels (there is no
second loop to run), so the labels' cost is put together from two figures: how many labels
a recorded step opened (read from its trace) and what opening and closing one costs, timed
here on this machine in a short profiler session of its own — ``record_function`` around
nothing, against the same wrapper that finds the profiler off and calls straight through
(what :mod:`attnprof.models.instrument` does for every labelled call). The median of a few
rounds, so one preempted round does not decide it; on a loaded machine every figure here
is an upper bound.
"""

from __future__ import annotations

import statistics
import time

__all__ = ["label_cost_us"]

#: The label timed: as long as a real one (``attnprof.module::attention::model.layers.0...``).
_LABEL = "attnprof.module::attention::model.layers.0.self_attn"


def label_cost_us(calls: int = 2000, rounds: int = 5) -> float:
    """µs one label adds to a step while the profiler records (never below 0)."""
    from torch._C._autograd import _profiler_enabled
    from torch.autograd.profiler import record_function
    from torch.profiler import ProfilerActivity, profile

    from attnprof.measure.memory import filtered_kineto_stderr

    def bare() -> float:
        t0 = time.perf_counter()
        for _ in range(calls):
            if not _profiler_enabled():
                pass
        return time.perf_counter() - t0

    def labelled() -> float:
        t0 = time.perf_counter()
        for _ in range(calls):
            if _profiler_enabled():
                with record_function(_LABEL):
                    pass
        return time.perf_counter() - t0

    costs = []
    # The same settings as a capture: shapes and memory recorded, CPU activity.
    with filtered_kineto_stderr(), profile(activities=[ProfilerActivity.CPU],
                                           record_shapes=True, profile_memory=True):
        for _ in range(rounds):
            on = labelled()
            costs.append(on)
    off = [bare() for _ in range(rounds)]
    return max(statistics.median(costs) - statistics.median(off), 0.0) / calls * 1e6
