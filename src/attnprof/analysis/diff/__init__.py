"""Diffs: two records, or two traces, compared — pure functions from records to a
:class:`~attnprof.record.diff.DiffRecord`.

:func:`diff_records` matches the rows of two records of one kind (a comparison and a
profile count as one kind), judges every metric (:mod:`.metrics`, :mod:`.stats`), lists
what changed around them (:mod:`.changes`) and, for profile and analyze records, diffs the
traces' reports (:mod:`.traces`). :func:`diff_trace_reports` does the last alone, for two
traces or two folders of them. :func:`~attnprof.analysis.diff.gate.regressions` is the CI
gate's verdict over a diff.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attnprof.analysis.diff.changes import environment_changes, struct_changes
from attnprof.analysis.diff.metrics import judge
from attnprof.analysis.diff.processes import (
    COMMON_SHIFT,
    ONE_PROCESS_FLOOR,
    common_speed,
    judge_processes,
    unjudge_process_moves,
)
from attnprof.analysis.diff.rows import compare_rows, model_rows, sweep_rows
from attnprof.analysis.diff.traces import diff_reports, pair_files
from attnprof.errors import UsageError
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.base import RecordBase
from attnprof.record.compare import CompareRecord
from attnprof.record.diff import (
    ALPHA,
    WATCHED_CHANGE,
    Change,
    DiffRecord,
    DiffSide,
    MetricChange,
    RowDiff,
    TraceDiff,
)
from attnprof.record.model import ModelRecord
from attnprof.record.sweep import SweepRecord
from attnprof.record.trace_report import TraceReport

__all__ = ["diff_records", "diff_trace_reports", "kind_family"]

#: Settings fields that say where outputs went, not how anything was measured.
_OUTPUT_FIELDS = ("trace_dir",)


def kind_family(kind: str) -> str:
    """The kind two records must share to be diffed (a profile is a comparison)."""
    return "compare" if kind == "profile" else kind


def diff_records(old: RecordBase, new: RecordBase, old_side: DiffSide, new_side: DiffSide,
                 alpha: float = ALPHA) -> DiffRecord:
    """``old`` against ``new``; :class:`UsageError` when they are of different kinds, or of
    a kind that has nothing to diff."""
    if kind_family(old.kind) != kind_family(new.kind):
        raise UsageError(f"{old_side.ref!r} is a {old.kind!r} record and {new_side.ref!r} a "
                         f"{new.kind!r} record; diff two records of one kind")
    diff = DiffRecord(old=old_side, new=new_side, alpha=alpha)
    if isinstance(old, CompareRecord) and isinstance(new, CompareRecord):
        diff.changes = [*environment_changes(old.environment, new.environment),
                        *struct_changes("settings", old.settings, new.settings,
                                        skip=_OUTPUT_FIELDS),
                        *struct_changes("workload", old.workload, new.workload)]
        diff.rows = compare_rows(old, new, alpha)
        diff.traces = [diff_reports(a.analysis, b.analysis, name=a.variant)
                       for a in old.results for b in new.results
                       if a.variant == b.variant and a.analysis and b.analysis]
    elif isinstance(old, SweepRecord) and isinstance(new, SweepRecord):
        diff.changes = [*environment_changes(old.environment, new.environment),
                        *struct_changes("settings", old.settings, new.settings,
                                        skip=_OUTPUT_FIELDS),
                        *struct_changes("workload", old.base, new.base)]
        diff.rows = sweep_rows(old, new, alpha)
    elif isinstance(old, ModelRecord) and isinstance(new, ModelRecord):
        diff.changes = [*environment_changes(old.environment, new.environment),
                        *struct_changes("settings", old.settings, new.settings,
                                        skip=_OUTPUT_FIELDS),
                        *struct_changes("model", old.model, new.model)]
        diff.rows = model_rows(old, new, alpha)
    elif isinstance(old, AnalyzeRecord) and isinstance(new, AnalyzeRecord):
        diff.traces, diff.warnings = _paired_reports(old.reports, new.reports)
        diff.changes = _trace_changes(diff.traces, old.reports, new.reports)
    else:
        raise UsageError(f"{old_side.ref!r} and {new_side.ref!r} are {old.kind!r} records, "
                         "which attnprof diff does not compare; diff compare, profile, "
                         "sweep, model or analyze records, or traces (a rank set's traces "
                         "diff rank by rank: attnprof diff FOLDER_A FOLDER_B)")
    judge_processes(diff.rows)
    judge(diff.rows, alpha)
    unjudge_process_moves(diff.rows)
    diff.warnings += _sample_warnings(diff.rows, alpha)
    by_process = common_speed(diff.rows, alpha)
    diff.warnings += by_process or _common_shift(diff.rows)
    diff.warnings += _one_process(diff.rows)
    if any(c.scope == "workload" for c in diff.changes):
        diff.warnings.append("the workloads differ (listed above): rows compare different "
                             "work, so their changes are not regressions of the code")
    diff.status = "complete"
    return diff


def diff_trace_reports(pairs: Sequence[tuple[str | None, TraceReport, TraceReport]],
                       old_side: DiffSide, new_side: DiffSide,
                       warnings: Sequence[str] = ()) -> DiffRecord:
    """A diff of traces: each ``(name, old report, new report)`` pair compared."""
    traces = [diff_reports(a, b, name=name) for name, a, b in pairs]
    return DiffRecord(old=old_side, new=new_side, traces=traces,
                      changes=_trace_changes(traces, [a for _, a, _ in pairs],
                                             [b for _, _, b in pairs]),
                      warnings=list(warnings), status="complete")


def _paired_reports(old: list[TraceReport], new: list[TraceReport]
                    ) -> tuple[list[TraceDiff], list[str]]:
    """Reports of two analyses paired by their traces' file names."""
    import os

    pairs, lone = pair_files([r.source for r in old], [r.source for r in new])
    warnings = ([f"traces with no match on the other side: {', '.join(lone)}"]
                if lone else [])
    return [diff_reports(old[i], new[j], name=os.path.basename(new[j].source))
            for i, j in pairs], warnings


def _trace_changes(traces: list[TraceDiff], old: Sequence[TraceReport],
                   new: Sequence[TraceReport]) -> list[Change]:
    """The device each side's traces ran on, when it differs."""
    def device(reports: Sequence[TraceReport]) -> str:
        names = sorted({n for r in reports for n in r.device_names})
        kinds = sorted({r.device for r in reports})
        return ", ".join(kinds) + (f" ({', '.join(names)})" if names else "")

    a, b = device(old), device(new)
    return [Change(scope="environment", what="device", old=a, new=b)] if a != b else []


def _one_process(rows: list[RowDiff]) -> list[str]:
    """What one process a side could not judge, and what it judged anyway: how far a
    median moves between processes is not in one process's samples."""
    flagged = [row for row in rows if (m := row.metric("latency_ms")) is not None
               and m.test == "samples" and m.significant]
    unjudged = [row for row in rows if (m := row.metric("latency_ms")) is not None
                and m.not_judged]
    said = ([f"{len(unjudged)} row(s) not judged (1 process a side): their samples differ, "
             f"but by less than one variant alone moves between fresh processes of "
             f"unchanged code (up to {ONE_PROCESS_FLOOR:.0%} on a quiet 2-core VM), or the "
             "way every other row moved, which is the process's speed as much as the "
             "code's; measure both sides with --processes 5 to judge them"]
            if unjudged else [])
    if not flagged:
        return said
    return [*said, f"{len(flagged)} row(s) changed by more than {ONE_PROCESS_FLOOR:.0%}, "
            "judged by their samples with one process a side, and how far a median moves "
            "between processes is not in its samples (on a shared 2-core VM, on one thread, "
            "41% of unchanged rows were flagged so; with --processes 5 a side, 0.6%: "
            "benchmarks/README.md); measure both sides with --processes 5 to judge against it"]


def _sample_warnings(rows: list[RowDiff], alpha: float) -> list[str]:
    """Rows whose sample counts cannot show any difference, however large; rows too noisy
    or too short to find a 10% change, with the samples that would."""
    warnings = []
    blind = [(row, m) for row in rows for m in row.metrics if m.detectable is False]
    if blind:
        row, m = blind[0]
        warnings.append(f"{len(blind)} row(s) have too few samples for any difference to be "
                        f"significant at alpha={alpha:g} (e.g. {_key(row)}: n={m.n_old} vs "
                        f"{m.n_new}); take more samples (a longer --min-time)")
    weak = [(row, m) for row in rows for m in row.metrics if m.detectable is not False
            and m.detectable_change is not None and m.detectable_change > WATCHED_CHANGE]
    by_process = [(row, m) for row, m in weak if m.test == "processes"]
    weak = [(row, m) for row, m in weak if m.test != "processes"]
    if by_process:
        warnings.append(_too_weak(
            by_process, "their medians move too far between processes for the processes "
            "measured", lambda m: f"{len(m.old_processes)}+{len(m.new_processes)} processes, "
            f"spread {m.spread:.0%} between them", "processes",
            "measure with more --processes on a quieter machine"))
    if weak:
        warnings.append(_too_weak(
            weak, "their samples are too few for their noise",
            lambda m: f"n={m.n_old}+{m.n_new}, spread {m.spread:.0%}", "samples",
            "take more samples (a longer --min-time) on a quieter machine"))
    return warnings


def _too_weak(weak: list[tuple[RowDiff, MetricChange]], why: str,
              counts: Callable[[MetricChange], str], unit: str, advice: str) -> str:
    """The warning for rows that cannot reliably show a :data:`WATCHED_CHANGE`, naming the
    weakest: ``counts`` says what it was measured with, ``unit`` what more of would find
    it."""
    row, m = max(weak, key=lambda pair: pair[1].detectable_change or 0.0)
    return (f"{len(weak)} row(s) cannot reliably show a {WATCHED_CHANGE:.0%} change: {why} "
            f"(e.g. {_key(row)}: {counts(m)}: changes below ±{m.detectable_change:.0%} are "
            f"likely \"~\"; about {m.samples_needed} {unit} per side would find "
            f"{WATCHED_CHANGE:.0%}); {advice}")


def _common_shift(rows: list[RowDiff]) -> list[str]:
    """A warning when every compared row's latency moved the same way: the samples of one
    run cannot see what moves a whole process, so such a shift is not the code's."""
    changes = [m.change for row in rows if (m := row.metric("latency_ms")) is not None
               and m.change is not None]
    if len(changes) < 2 or min(abs(c) for c in changes) < COMMON_SHIFT:
        return []
    if not (all(c > 0 for c in changes) or all(c < 0 for c in changes)):
        return []
    low, high = sorted((min(changes), max(changes)), key=abs)
    return [f"every row's latency moved the same way ({low:+.0%} … {high:+.0%}): the machine "
            "or the process ran at another speed, which one run's samples cannot see, so "
            "these changes are not evidence of a change in the code; compare old and new in "
            "one run (attnprof compare --variants OLD,NEW) or repeat each run"]


def _key(row: RowDiff) -> str:
    return " ".join(str(v) for v in row.key.values())
