"""This machine measured for ``attnprof env``: the environment and the ceilings per dtype."""

from __future__ import annotations

from collections.abc import Sequence

from attnprof.measure.allocator import release_free_memory
from attnprof.measure.ceilings import measure_ceilings
from attnprof.measure.environment import collect_environment
from attnprof.record.base import now_iso
from attnprof.record.machine import MachineProfile

__all__ = ["measure_machine"]


def measure_machine(device: str, dtypes: Sequence[str]) -> MachineProfile:
    """The environment of ``device`` and its matmul and copy ceilings in each dtype."""
    measured = now_iso()
    ceilings = {}
    for dtype in dtypes:
        ceilings[dtype] = measure_ceilings(device, dtype).as_record(measured)
        release_free_memory()
    return MachineProfile(environment=collect_environment(device), ceilings=ceilings,
                          measured=measured)
