"""``attnprof analyze``: explain torch.profiler traces; one request in, one record out.

:func:`run` decides what the traces are. One trace, or traces that are not one run's
ranks (the traces of a comparison, ranks of different jobs), are analysed each on its own,
in this process (:func:`~attnprof.analysis.analyze.analyze_files`): an
:class:`~attnprof.record.analyze.AnalyzeRecord`. The ranks of one distributed run
(:func:`~attnprof.analysis.ranks.identify.identify_rank_set`) are read by the request's
executor — local worker processes by default, one rank per call, each returning a compact
:class:`~attnprof.record.ranks.RankSummary` — and judged together
(:func:`~attnprof.analysis.ranks.judge_ranks`): a
:class:`~attnprof.record.ranks.RanksRecord`.

Nothing here imports torch; Ray only when the request asks for it. ``attnprof analyze``'s
start-up is most of a small trace's analysis (``tests/cli/test_analyze_startup.py`` holds
the modules it loads to a budget): import lazily, where a path uses it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.ranks import RanksRecord, RankSummary

if TYPE_CHECKING:
    from attnprof.analysis.ranks.identify import RankSet
    from attnprof.record.trace_report import TraceReport

__all__ = ["AnalyzeProgress", "AnalyzeRequest", "read_rank_set", "request_for_traces", "run"]


class AnalyzeProgress(Protocol):
    """What :func:`run` tells as it goes (the CLI prints it on stderr; the API is quiet)."""

    def note(self, text: str) -> None:
        """Something the caller should know that is not in the record: why traces that
        looked like one run's ranks are analysed one by one, entries of a folder not
        read."""

    def rank_read(self, done: int, total: int, summary: RankSummary) -> None:
        """A rank of a rank set was read: ``done`` of ``total`` so far."""

    def trace_head(self, report: TraceReport) -> None:
        """A trace analysed on its own has everything but its findings, model attribution
        and timeline final (:func:`~attnprof.analysis.analyze.analyze_trace`'s
        ``on_head``): its header and region tables can be shown while the rest is worked
        out. Optional: a progress object without it is not told."""


class AnalyzeRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What to analyse and how; built by the CLI from its flags, or by any caller
    (:func:`request_for_traces` expands folders and patterns as the CLI does)."""

    #: Trace files, folders already expanded (:func:`request_for_traces`).
    paths: tuple[str, ...]
    #: Files found in a folder or by a pattern: one that cannot be read is reported and
    #: the others are analysed (a file named on its own must be readable).
    optional: frozenset[str] = frozenset()
    #: User annotations to take as regions (traces are then analysed one by one).
    region: str | None = None
    #: "auto": a rank set is read as one; "each": every trace on its own regardless.
    ranks: Literal["auto", "each"] = "auto"
    #: Where ranks are read: "process" (local workers), "inline" or "ray".
    executor: str = "process"
    #: Ranks read at once (default: the cores; Ray: the cluster's CPUs).
    workers: int | None = None
    ray_address: str | None = None
    #: What the caller found while expanding folders (entries not read, and why): notes of
    #: a rank set's record.
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.paths, str):  # one trace given as a string: one path, not its letters
            msgspec.structs.force_setattr(self, "paths", (self.paths,))
        _check(self)  # a bad option fails where the request is made, before any work


def request_for_traces(traces: Iterable[str], **options: object) -> AnalyzeRequest:
    """The request for trace arguments as ``attnprof analyze`` takes them: a file as given,
    a folder as the traces in it, a quoted pattern as the files it matches
    (:func:`~attnprof.analysis.trace_files.expand_trace_paths`); files found in a folder or
    by a pattern are optional, and what a folder holds that is not read is noted.
    ``options``: the other fields of :class:`AnalyzeRequest`."""
    from attnprof.analysis.trace_files import expand_trace_paths, skipped_note

    options_checked = AnalyzeRequest(paths=(), **options)  # type: ignore[arg-type]
    given = list(traces)
    paths = [p for name in given for p in expand_trace_paths(name)]
    return msgspec.structs.replace(
        options_checked, paths=tuple(paths),
        optional=frozenset(p for p in paths if p not in given),
        notes=tuple(n for name in given if (n := skipped_note(name))))


def run(request: AnalyzeRequest, progress: AnalyzeProgress | None = None
        ) -> AnalyzeRecord | RanksRecord:
    """Analyse the traces of ``request``: an ``analyze`` record (each trace on its own) or,
    for the ranks of one distributed run, a ``ranks`` record (see the module doc).

    A file that cannot be read fails the call (:class:`~attnprof.errors.UsageError`) unless
    it is one of ``request.optional``, which is reported in the record's ``unreadable``
    instead; so does a request with a bad option or with no readable trace at all.
    ``progress`` hears notes and each rank as it is read.
    """
    record = _analyze(request, progress)
    if isinstance(record, RanksRecord):  # the set's record holds the request's notes
        unreadable = record.unreadable
        if record.ranks and len(unreadable) == len(record.ranks):
            from attnprof.errors import UsageError

            raise UsageError(f"no rank could be read: {unreadable[0].source}: "
                             f"{unreadable[0].error}")
        return record
    if progress is not None:
        for note in request.notes:
            progress.note(note)
    if not record.reports:  # every file found was unreadable: nothing to show or write
        from attnprof.errors import UsageError

        raise UsageError(f"no trace could be read: {record.unreadable[0].source}: "
                         f"{record.unreadable[0].reason}")
    return record


def _check(request: AnalyzeRequest) -> None:
    """A bad option of ``request``, as one :class:`~attnprof.errors.UsageError` that names
    the flag and the fix, before anything is read."""
    from attnprof.errors import UsageError

    if request.region is not None:
        import re

        try:
            re.compile(request.region)
        except re.error as exc:
            raise UsageError(f"--region {request.region!r} is not a regular expression "
                             f"({exc})") from None
    if request.workers is not None and request.workers < 1:
        raise UsageError(f"--workers {request.workers} is not a number of workers; give a "
                         "whole number from 1 up, e.g. --workers 4")
    if request.ray_address and request.executor != "ray":
        raise UsageError("--ray-address is for --executor ray; add --executor ray, or drop "
                         "the address")


def _analyze(request: AnalyzeRequest, progress: AnalyzeProgress | None
             ) -> AnalyzeRecord | RanksRecord:
    """The record, before the checks of what could be read. ``progress`` hears why traces
    that looked like a run's ranks (two or more state a rank), or that came with options
    for ranks, are analysed one by one instead."""
    if request.ranks == "auto" and request.region is None and len(request.paths) > 1:
        from attnprof.analysis.ranks.identify import identify_rank_set

        found = identify_rank_set(list(request.paths))
        if found.is_set:
            return read_rank_set(found, request, progress=progress)
        asked = request.executor != "process" or request.workers is not None
        if progress is not None and (found.ranked >= 2 or asked):
            progress.note(f"not read as the ranks of one run ({found.reason}): each trace "
                          "is analysed on its own")
    elif progress is not None and (request.executor != "process"
                                   or request.workers is not None):
        why = ("--region picks regions of single traces" if request.region is not None
               else "--each was given" if request.ranks == "each" else "a single trace")
        progress.note(f"--executor and --workers apply to the ranks of one run ({why}): "
                      "each trace is analysed on its own, here")
    from attnprof.analysis.analyze import analyze_files

    return analyze_files(list(request.paths), region_pattern=request.region,
                         optional=request.optional,
                         on_head=getattr(progress, "trace_head", None))


def read_rank_set(found: RankSet, request: AnalyzeRequest, *,
                  progress: AnalyzeProgress | None = None) -> RanksRecord:
    """Read every rank of ``found`` with the request's executor, and judge them together."""
    from attnprof.analysis.ranks import judge_ranks, order_ranks
    from attnprof.analysis.ranks.summary import failed_rank, read_rank
    from attnprof.run.executors import get_executor
    from attnprof.run.executors.pool import default_workers

    remote = request.executor == "ray"
    executor = get_executor(request.executor,
                            **({"address": request.ray_address} if remote else {}))
    jobs = list(found.files)
    if remote:  # a task may run on another node, in another folder: absolute paths
        jobs = [replace(job, location=os.path.abspath(job.path)) for job in jobs]
    workers = request.workers
    if workers is None and not remote:  # Ray: as many as the cluster has room for
        workers = 1 if request.executor == "inline" else default_workers()
    if workers is not None:
        workers = min(workers, len(jobs))
    done = 0

    def heard(index: int, summary: RankSummary) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress.rank_read(done, len(jobs), summary)

    summaries = executor.map_calls(read_rank, jobs, failed=failed_rank, workers=workers,
                                   on_result=heard)
    ranks = order_ranks(summaries)
    judged = judge_ranks(ranks, found.world_size)
    return RanksRecord(world_size=found.world_size, ranks=ranks, steps=judged.steps,
                       findings=judged.findings,
                       notes=[*request.notes, *found.notes, *judged.notes],
                       executor=request.executor, workers=workers, status="complete")
