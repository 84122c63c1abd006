"""``attnprof diff A B``: what changed between two runs or two traces, judged with
statistics. Each side is named as a stored run (id, unique prefix or label), a record
file, a trace file or a folder of traces; it is resolved, loaded and diffed
(:mod:`attnprof.analysis.diff`, the pure part). Asked for a gate (``fail_on_regression``),
the request is refused when it could judge nothing or would compare different workloads.
Nothing here imports torch."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from attnprof.analysis.diff import diff_records, diff_trace_reports
from attnprof.analysis.diff.traces import pair_files
from attnprof.analysis.trace_files import expand_trace_paths
from attnprof.errors import UsageError
from attnprof.formatting import safe_text
from attnprof.record.base import RecordBase
from attnprof.record.diff import ALPHA, DiffRecord, DiffSide
from attnprof.record.family import is_record_file, load_record
from attnprof.record.trace_report import TraceReport
from attnprof.store import Store

__all__ = ["DiffRequest", "Side", "check_gate", "diff_sources", "resolve_side", "run"]


@dataclass(frozen=True, slots=True)
class DiffRequest:
    """What ``attnprof diff`` was asked: the old and the new side, as the user named them."""

    #: The old side: a run id, a unique prefix of one, a label, a record file, a trace or
    #: a folder of traces.
    old: str
    #: The new side, of the same kinds.
    new: str
    #: The significance level of each judged change (Holm-corrected across rows).
    alpha: float = ALPHA
    #: The results store stored runs are looked up in (``None``: ``$ATTNPROF_STORE``, else
    #: the user's store); it is read, never created.
    store: str | os.PathLike[str] | None = None
    #: The regression gate's threshold in percent (``--fail-on-regression``), or ``None``
    #: for no gate. With a gate, a diff of different workloads, or one that judges nothing,
    #: is refused (:func:`check_gate`).
    fail_on_regression: float | None = None
    #: Gate runs of different workloads anyway (``--allow-workload-change``).
    allow_workload_change: bool = False


def run(request: DiffRequest, progress: object | None = None) -> DiffRecord:
    """The diff record of ``request``'s two sides: rows matched by variant (sweep point,
    model phase), each latency judged against noise, or for two traces their kernels and
    ops per region. Raises :class:`~attnprof.errors.UsageError` for a side that names
    nothing, a record against a trace, or a gate that :func:`check_gate` refuses.
    ``progress``: this command has none to tell (kept for the one signature)."""
    from attnprof.store import open_store, store_path

    path = store_path(None if request.store is None else os.fspath(request.store))
    assert path is not None
    with open_store(path, create=False) as store:
        diff = diff_sources(request, store)
    if request.fail_on_regression is not None:
        check_gate(diff, allow_workload_change=request.allow_workload_change)
    return diff


#: Changes that make two records measure different work (a model is a workload too).
_WORK_SCOPES = ("workload", "model")


def check_gate(diff: DiffRecord, *, allow_workload_change: bool = False) -> None:
    """Refuse a gate over different workloads (unless ``allow_workload_change``), and one
    that could judge nothing: both are a :class:`~attnprof.errors.UsageError` (exit 2)."""
    from attnprof.analysis.diff.gate import judged, not_judged

    changed = [c for c in diff.changes if c.scope in _WORK_SCOPES]
    if changed and not allow_workload_change:
        fields = ", ".join(f"{c.what} {c.old} → {c.new}" for c in changed)
        raise UsageError(f"--fail-on-regression: the workloads differ ({fields}), so the rows "
                         "measure different work, not a change of the code; diff runs of one "
                         "workload, or add --allow-workload-change to gate them anyway")
    if not judged(diff):
        unjudged = len(not_judged(diff))
        what = ("two traces: time per step from one capture a side is shown, not judged"
                if diff.traces and not diff.rows else
                f"{unjudged} latency(s) not judged, 1 process a side, and no peak memory "
                "both sides measured" if unjudged else
                "no row has a latency or peak memory both sides measured")
        raise UsageError(f"--fail-on-regression judged nothing ({what}); gate on runs "
                         "(compare, profile, model; --processes 5 for latency), or drop "
                         "--fail-on-regression")


@dataclass(frozen=True)
class Side:
    """One side resolved: a record, or the trace files it stands for."""

    side: DiffSide
    record: RecordBase | None = None
    traces: tuple[str, ...] = ()


def resolve_side(ref: str, store: Store) -> Side:
    """A record file, a trace file or a folder of traces when ``ref`` names one, else the
    stored run it names."""
    shown = safe_text(ref)
    if not ref.strip():
        raise UsageError("an empty name to diff; give a run id, a label, a record file or "
                         "a trace")
    path = Path(ref)
    try:
        found = os.stat(path)
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise UsageError(f"cannot read {shown!r} ({exc.strerror}); check the path") from None
    if found is not None and stat.S_ISDIR(found.st_mode):
        return Side(DiffSide(ref=ref, kind="trace", source=ref),
                    traces=tuple(expand_trace_paths(ref)))
    if found is not None:
        if not stat.S_ISREG(found.st_mode):
            raise UsageError(f"{shown!r} is not a regular file; give a record, a trace, a "
                             "folder of traces or a stored run")
        if is_record_file(path):
            record = load_record(path)
            return Side(DiffSide(ref=ref, kind=record.kind, run_id=record.run_id,
                                 created=record.created, source=ref), record=record)
        return Side(DiffSide(ref=ref, kind="trace", source=ref), traces=(ref,))
    run = store.find(ref)
    return Side(DiffSide(ref=ref, kind=run.kind, run_id=run.run_id, label=run.label,
                         created=run.created), record=store.load(run.run_id))


def diff_sources(request: DiffRequest, store: Store) -> DiffRecord:
    """The diff of the two sides of ``request``."""
    old, new = resolve_side(request.old, store), resolve_side(request.new, store)
    if (old.record is None) != (new.record is None):
        record, trace = (old, new) if old.record is not None else (new, old)
        raise UsageError(f"{safe_text(record.side.ref)!r} is a {record.side.kind!r} record "
                         f"and {safe_text(trace.side.ref)!r} a trace; diff two records or "
                         "two traces (attnprof analyze --json makes a record of traces)")
    if old.record is not None and new.record is not None:
        return diff_records(old.record, new.record, old.side, new.side, request.alpha)
    pairs, warnings = _pair_traces(old.traces, new.traces)
    return diff_trace_reports([(name, _report(a), _report(b)) for name, a, b in pairs],
                              old.side, new.side, warnings)


def _pair_traces(old: tuple[str, ...], new: tuple[str, ...]
                 ) -> tuple[list[tuple[str | None, str, str]], list[str]]:
    """Two single traces pair; folders pair their files by name."""
    if len(old) == 1 and len(new) == 1:
        return [(None, old[0], new[0])], []
    pairs, lone = pair_files(list(old), list(new))
    if not pairs:
        raise UsageError("the two folders have no trace of the same file name to compare; "
                         "diff two trace files instead")
    warnings = [f"traces with no match on the other side: {', '.join(lone)}"] if lone else []
    return [(os.path.basename(new[j]), old[i], new[j]) for i, j in pairs], warnings


def _report(path: str) -> TraceReport:
    from attnprof.analysis.analyze import analyze_trace
    from attnprof.trace import load_trace

    return analyze_trace(load_trace(path))
