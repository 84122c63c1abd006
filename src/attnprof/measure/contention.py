"""How long this process's threads waited for a CPU: other processes' load, measured.

On a machine shared with other jobs a CPU step is not just slower while another process
runs; its shape changes (:mod:`attnprof.knowledge.capture_noise`), so a trace taken then
attributes the time of that moment, however exact. Linux counts, per thread, the time it
spent runnable but waiting on a run queue (``/proc/<pid>/task/<tid>/schedstat``, second
field, ns); the sum over the process's threads, as a fraction of a stretch's wall time,
says how contended the stretch was. :func:`cpu_wait_s` reads it; ``None`` where the kernel
does not keep it (other systems, or a kernel without ``CONFIG_SCHED_INFO``).
"""

from __future__ import annotations

import os

from attnprof.measure.threads import usable_cpus

__all__ = ["cpu_wait_s", "oversubscribed", "wait_fraction", "waited_s"]

_TASKS = "/proc/self/task"


def cpu_wait_s() -> float | None:
    """Run-queue wait of all of this process's threads so far, in seconds (``None`` where
    the platform does not count it). A thread that exits takes its count with it, so take
    differences over stretches the threads live through (torch's pool lives on)."""
    try:
        tids = os.listdir(_TASKS)
    except OSError:
        return None
    total, seen = 0, False
    for tid in tids:
        try:
            with open(f"{_TASKS}/{tid}/schedstat", "rb") as f:
                fields = f.read().split()
        except OSError:  # the thread exited between the listing and the read
            continue
        if len(fields) >= 2:
            total += int(fields[1])
            seen = True
    return total / 1e9 if seen else None


def waited_s(before: float | None, after: float | None) -> float | None:
    """Seconds spent waiting for a CPU between two :func:`cpu_wait_s` readings (``None``
    when either is unknown)."""
    if before is None or after is None:
        return None
    return max(after - before, 0.0)


def wait_fraction(before: float | None, after: float | None, wall_s: float) -> float | None:
    """The fraction of a stretch of ``wall_s`` seconds that was spent waiting for a CPU,
    from two :func:`cpu_wait_s` readings (``None`` when either is unknown)."""
    waited = waited_s(before, after)
    if waited is None or wall_s <= 0:
        return None
    return waited / wall_s


def oversubscribed() -> tuple[int, int] | None:
    """``(threads, cpus)`` when torch runs more intra-op threads than this process may use
    CPUs (``--threads 8`` on 2): then a wait for a CPU is the run's own threads taking
    turns, not other processes' load, and a note must not blame them. ``None`` otherwise."""
    import torch

    threads, cpus = torch.get_num_threads(), usable_cpus()
    return (threads, cpus) if threads > cpus else None
