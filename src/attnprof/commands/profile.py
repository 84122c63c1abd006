"""``profile``: measure each variant, capture a torch.profiler trace of it and explain the
trace as ``analyze`` would, with the workload and the variant's captured warnings as
extra evidence; the record (kind ``profile``) holds each variant's analysis
(``VariantResult.analysis``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from attnprof.commands.compare import MeasureProgress, Sampling, measure
from attnprof.commands.saving import RecordFile

if TYPE_CHECKING:
    from attnprof.outputs import Output
    from attnprof.record.compare import ProfileRecord

__all__ = ["DEFAULT_OUT", "ProfileRequest", "run"]

#: The folder the traces go to when the request names none.
DEFAULT_OUT = "attnprof-traces"


@dataclass(frozen=True, slots=True)
class ProfileRequest:
    """What ``attnprof profile`` is asked: the variants, the workload, how to measure and
    trace, and where the traces and the record go."""

    #: Variant names or ``path/to/file.py:callable``.
    variants: tuple[str, ...]
    #: The Workload fields given; the rest: the device's defaults.
    workload: Mapping[str, Any] = field(default_factory=dict)
    timing: Sampling = field(default_factory=Sampling)
    #: The folder for one trace per variant.
    out: str = DEFAULT_OUT
    #: Profiled steps (forwards) per trace.
    steps: int = 3
    #: The record file, saved after every variant; ``None``: no file.
    json: str | None = None
    #: The store whose cached ceilings the run reuses; ``no_store``: none.
    store: str | None = None
    no_store: bool = False
    #: Every output of the command line, checked together beforehand; their folders are
    #: made once the request is found sound.
    outputs: tuple[Output, ...] = ()

    def __post_init__(self) -> None:
        """A program's mistakes in the fields, one line each (:mod:`.fields`)."""
        from attnprof.commands.fields import set_names, workload_fields

        set_names(self, "variants")
        workload_fields(self.workload)


def run(request: ProfileRequest, progress: MeasureProgress | None = None) -> ProfileRecord:
    """Measure, trace and explain each of ``request.variants``; the record (kind
    ``profile``), each row with its trace's analysis.
    :class:`~attnprof.errors.UsageError` before anything runs for a mistake."""
    from attnprof.errors import UsageError
    from attnprof.record.compare import ProfileRecord

    if request.steps <= 0:
        raise UsageError(f"--steps must be a positive integer, got {request.steps}")
    record = measure(request.variants, request.workload, request.timing, kind="profile",
                     record_file=RecordFile(request.json), trace_dir=request.out,
                     trace_steps=request.steps, outputs=request.outputs,
                     store=request.store, no_store=request.no_store, progress=progress)
    assert isinstance(record, ProfileRecord)  # the runner makes the kind it is asked for
    return record
