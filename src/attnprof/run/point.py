"""A point: one workload with its variants, the unit an executor runs.

It is plain data (a ``msgspec.Struct``) so that it can be sent to a worker process or a Ray
task as JSON and come back as a record; variants travel by name (``file.py:fn`` user
variants are imported again where the point runs).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from attnprof.record.compare import CompareRecord, ProfileRecord
from attnprof.record.environment import Ceilings
from attnprof.record.model import ModelSettings
from attnprof.workload.model_spec import ModelSpec
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings

__all__ = ["OWN_STEPS", "ModelPoint", "Point", "RecordKind", "empty_record"]

#: The record kind a point's run produces.
RecordKind = Literal["compare", "profile"]
#: What a point's run reports progress under before any variant runs: attnprof's own
#: measurements and set-up (the ceilings, the float64 reference, the profiler's first
#: start), not a variant's.
OWN_STEPS = ("ceilings", "reference", "profiler")


class Point(msgspec.Struct, frozen=True, kw_only=True):
    """One workload, the variants to measure on it, and how to measure."""

    workload: Workload
    variants: tuple[str, ...]
    settings: Settings = msgspec.field(default_factory=Settings)
    kind: RecordKind = "compare"
    #: Ceilings already measured for this workload's device and dtype (e.g. by an earlier
    #: worker of the same run): used as they are instead of being measured again.
    ceilings: Ceilings | None = None

    def replace(self, **changes: object) -> Point:
        """A copy with ``changes`` applied."""
        return msgspec.structs.replace(self, **changes)


class ModelPoint(msgspec.Struct, frozen=True, kw_only=True):
    """A model to profile and how (``attnprof model``): what an executor runs for it, in
    this process or in a worker that builds the model again from the spec."""

    spec: ModelSpec
    settings: ModelSettings = msgspec.field(default_factory=ModelSettings)
    #: The implementations this run measures (``None``: every one the spec names). The
    #: others still decide the reference, so accuracy is judged against the same one.
    only: tuple[str, ...] | None = None

    def replace(self, **changes: object) -> ModelPoint:
        """A copy with ``changes`` applied."""
        return msgspec.structs.replace(self, **changes)


def empty_record(point: Point) -> CompareRecord:
    """A record of ``point`` with no rows yet: the header every way of running it fills."""
    from attnprof.measure.environment import collect_environment
    from attnprof.workload import costs

    record_type = ProfileRecord if point.kind == "profile" else CompareRecord
    return record_type(environment=collect_environment(point.workload.device),
                       workload=point.workload.resolved(), settings=point.settings,
                       flops_convention=costs.flops_convention(point.workload),
                       ceilings=point.ceilings)
