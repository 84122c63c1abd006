"""The intra-op threads variants are measured on (``Settings.threads``).

torch runs a CPU op on a pool of threads, one per core by default. A parallel op ends when
its slowest thread does, so its time depends on everything else the cores do: another
process, the interpreter's own work, and on a virtual machine where the host places the
vCPUs, which it may change every few seconds. On the 2-vCPU development VM a bare loop of
SDPA calls moved between 7.4 and 8.9 ms in windows of 3 s on two threads, with the guest
idle and no steal counted, and held 13.7-14.1 ms on one (benchmarks/README.md, "Threads").
So CPU variants are timed on :data:`~attnprof.workload.settings.DEFAULT_CPU_THREADS` unless
the user asks for more, and the pool is put back as it was afterwards.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["measuring_threads", "usable_cpus"]


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity where the platform has one (a
    container's or ``taskset``'s limit, not the machine's count), else the machine's."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def measuring_threads(threads: int | None) -> Iterator[None]:
    """Run the block on ``threads`` intra-op threads (``None``: leave the pool as it is),
    then put the count back."""
    if threads is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
