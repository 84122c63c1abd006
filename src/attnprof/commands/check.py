"""``check``: expected vs observed. The target is a trace file (analysed as ``analyze``
would) or a variant name (measured and traced now, as ``profile`` would, with the
workload given); the record (kind ``check``) holds a row per expectation and the verdict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnprof.commands.compare import MeasureProgress, Sampling

if TYPE_CHECKING:
    from attnprof.analysis.check import Measured
    from attnprof.outputs import Output
    from attnprof.record.check import CheckRecord
    from attnprof.record.compare import CompareRecord
    from attnprof.record.trace_report import TraceReport

__all__ = ["CheckRequest", "is_trace", "run"]


@dataclass(frozen=True, slots=True)
class CheckRequest:
    """What ``attnprof check`` is asked: an expectations file and what to hold to it."""

    #: The expectations file (TOML).
    expect: str
    #: A trace file, or a variant name (or ``path/to/file.py:callable``) to measure now.
    target: str
    #: For a variant: the Workload fields given; the rest: the device's defaults.
    workload: Mapping[str, Any] = field(default_factory=dict)
    timing: Sampling = field(default_factory=Sampling)
    #: For a variant: profiled steps per trace.
    steps: int = 3
    #: The record file; ``None``: no file.
    json: str | None = None
    #: The store whose cached ceilings a variant's run reuses; ``no_store``: none.
    store: str | None = None
    no_store: bool = False
    #: Every output of the command line, checked together beforehand; their folders are
    #: made once the record is made.
    outputs: tuple[Output, ...] = ()

    def __post_init__(self) -> None:
        """A program's mistakes in the fields, one line each (:mod:`.fields`)."""
        from attnprof.commands.fields import workload_fields

        workload_fields(self.workload)


def run(request: CheckRequest, progress: MeasureProgress | None = None) -> CheckRecord:
    """Check ``request.target`` against ``request.expect``; the check's record, whose
    ``ok`` is the verdict. :class:`~attnprof.errors.UsageError` for a malformed file or a
    variant that does not run here."""
    from attnprof.analysis.check import check_expectations, pick_region
    from attnprof.commands.saving import RecordFile
    from attnprof.knowledge.annotations import region_name
    from attnprof.outputs import Output, create_folders
    from attnprof.record.check import CheckRecord
    from attnprof.workload.expectations import load_expectations

    expectations = load_expectations(request.expect)  # a malformed file fails first
    measured_now = None  # a variant is measured now: its workload and environment are kept
    measured: Measured | None = None
    if is_trace(request.target):
        report, wanted, source = _from_trace(request.target), expectations.region, \
            request.target
    else:
        measured_now, measured, source = _from_variant(request, progress)
        analysis = measured_now.results[0].analysis
        assert analysis is not None  # _from_variant refuses a row without one
        report = analysis
        wanted = expectations.region or region_name(request.target)
    region = pick_region(report, wanted)
    rows = check_expectations(expectations, region, measured)
    record = CheckRecord(
        expectations=request.expect, title=expectations.title, target=request.target,
        source=source, region=region.name, rows=rows, report=report, status="complete",
        workload=measured_now.workload if measured_now else None,
        environment=measured_now.environment if measured_now else None)
    # A --plots folder yet to be made (a --json may be in it).
    create_folders(request.outputs or ([Output("--json", request.json)] if request.json
                                       else []))
    RecordFile[CheckRecord](request.json).save(record)
    return record


def is_trace(target: str) -> bool:
    """Whether ``target`` names a trace file (any file: a FIFO, a dangling link too, which
    the loader refuses in its words) rather than a variant."""
    from attnprof.errors import UsageError

    path = Path(target)
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        return True
    if target.endswith((".json", ".json.gz")):
        raise UsageError(f"trace file {target!r} does not exist; check the path")
    return False


def _from_trace(path: str) -> TraceReport:
    from attnprof.analysis.analyze import analyze_trace
    from attnprof.trace import load_trace

    return analyze_trace(load_trace(path))


def _from_variant(request: CheckRequest, progress: MeasureProgress | None
                  ) -> tuple[CompareRecord, Measured, str]:
    import tempfile

    from attnprof.analysis.check import Measured
    from attnprof.commands.compare import measure
    from attnprof.commands.saving import RecordFile
    from attnprof.errors import UsageError

    if request.steps <= 0:
        raise UsageError(f"--steps must be a positive integer, got {request.steps}")
    with tempfile.TemporaryDirectory(prefix="attnprof-check-") as tmp:
        record = measure([request.target], request.workload, request.timing, kind="profile",
                         record_file=RecordFile(None), trace_dir=tmp,
                         trace_steps=request.steps, store=request.store,
                         no_store=request.no_store, progress=progress)
    (row,) = record.results
    if row.status != "ok" or row.analysis is None:
        raise UsageError(f"variant {request.target!r} did not run here ({row.status}: "
                         f"{row.reason}); choose a variant this device supports")
    latency = row.latency_ms.median if row.latency_ms else None
    source = f"{request.target} measured now: {record.workload.describe()}"
    return (record, Measured(latency_ms=latency, peak_memory_bytes=row.peak_memory_bytes),
            source)
