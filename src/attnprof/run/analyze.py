"""``attnprof analyze``'s library side: one request in, one record out.

:func:`analyze` decides what the traces are. One trace, or traces that are not one run's
ranks (the traces of a comparison, ranks of different jobs), are analysed each on its own,
in this process (:func:`~attnprof.analysis.analyze.analyze_files`): an
:class:`~attnprof.record.analyze.AnalyzeRecord`. The ranks of one distributed run
(:func:`~attnprof.analysis.ranks.identify.identify_rank_set`) are read by the request's
executor — local worker processes by default, one rank per call, each returning a compact
:class:`~attnprof.record.ranks.RankSummary` — and judged together
(:func:`~attnprof.analysis.ranks.judge_ranks`): a
:class:`~attnprof.record.ranks.RanksRecord`.

Nothing here imports torch; Ray only when the request asks for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

import msgspec

from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.ranks import RanksRecord, RankSummary

if TYPE_CHECKING:
    from attnprof.analysis.ranks.identify import RankSet

__all__ = ["AnalyzeRequest", "analyze", "read_rank_set"]

#: Told of each rank as it is read: (ranks read so far, ranks in the set, the summary).
OnRank = Callable[[int, int, RankSummary], None]


class AnalyzeRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What to analyse and how; built by the CLI from its flags (or by any caller)."""

    #: Trace files, folders already expanded (see ``attnprof.cli.analyze_cmd``).
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


def analyze(request: AnalyzeRequest, *, on_rank: OnRank | None = None,
            on_note: Callable[[str], None] | None = None) -> AnalyzeRecord | RanksRecord:
    """The record for ``request`` (see the module doc). ``on_note`` hears why traces that
    looked like a run's ranks (two or more state a rank), or that came with options for
    ranks, are analysed one by one instead."""
    if request.ranks == "auto" and request.region is None and len(request.paths) > 1:
        from attnprof.analysis.ranks.identify import identify_rank_set

        found = identify_rank_set(list(request.paths))
        if found.is_set:
            return read_rank_set(found, request, on_rank=on_rank)
        asked = request.executor != "process" or request.workers is not None
        if on_note is not None and (found.ranked >= 2 or asked):
            on_note(f"not read as the ranks of one run ({found.reason}): each trace is "
                    "analysed on its own")
    elif on_note is not None and (request.executor != "process"
                                  or request.workers is not None):
        why = ("--region picks regions of single traces" if request.region is not None
               else "--each was given" if request.ranks == "each" else "a single trace")
        on_note(f"--executor and --workers apply to the ranks of one run ({why}): each "
                "trace is analysed on its own, here")
    from attnprof.analysis.analyze import analyze_files

    return analyze_files(list(request.paths), region_pattern=request.region,
                         optional=request.optional)


def read_rank_set(found: RankSet, request: AnalyzeRequest, *,
                  on_rank: OnRank | None = None) -> RanksRecord:
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
        if on_rank is not None:
            on_rank(done, len(jobs), summary)

    summaries = executor.map_calls(read_rank, jobs, failed=failed_rank, workers=workers,
                                   on_result=heard)
    ranks = order_ranks(summaries)
    judged = judge_ranks(ranks, found.world_size)
    return RanksRecord(world_size=found.world_size, ranks=ranks, steps=judged.steps,
                       findings=judged.findings,
                       notes=[*request.notes, *found.notes, *judged.notes],
                       executor=request.executor, workers=workers, status="complete")
