"""A comparison measured in several fresh processes, one after another, merged into one
record (``--processes N``; pyperf's ``--processes``, for the same reason).

One process's medians are a property of that process as much as of the variants: where
its memory landed, where its threads ran, what the host's other tenants did meanwhile. On
the 2-core development VM, unchanged code in a fresh process ran every variant 4-29%
faster or slower together, and a variant's median moved 10-20% between processes while
its own samples were tight to a few percent (benchmarks/README.md). Samples from one
process cannot show that spread; medians from several can. So each process runs the whole
comparison (warm-up, interleaved rounds, every phase) in a worker of its own
(:class:`~attnprof.run.executors.process.ProcessExecutor`), and the merged row keeps each
process's median beside all of their samples (``Latency.process_medians``): what
``attnprof diff`` tests when both sides have them, and the spread the terminal table
shows.

A row that failed in any process is that process's row (with a note saying which): a
variant that crashes one time in three is not ``ok``. Traces, when asked for, are taken
in the first process only (one trace per variant, as with one process).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import msgspec

from attnprof.measure.stats import summarize
from attnprof.noise import relative_range
from attnprof.record.compare import CompareRecord, VariantResult
from attnprof.run.executors import Executor
from attnprof.run.point import Point
from attnprof.run.point_runner import OnRecord, Progress
from attnprof.run.rows import CONTENDED_NOTE, latency

__all__ = ["merge_processes", "process_spread", "run_in_processes"]


def run_in_processes(point: Point, executor: Executor | None, *,
                     progress: Progress | None = None,
                     on_record: OnRecord | None = None) -> CompareRecord:
    """Measure ``point`` in ``point.settings.plan.processes`` fresh worker processes, one
    after another, and merge them. ``on_record`` hears the first process's rows as they
    come, then the merged record after each later process: an interrupted run keeps every
    process that finished."""
    from attnprof.run.executors.process import ProcessExecutor

    runner = executor if executor is not None and executor.name == "process" else (
        ProcessExecutor(timeout_s=None))
    count = point.settings.plan.processes
    records: list[CompareRecord] = []
    for index in range(count):
        settings = point.settings if index == 0 else msgspec.structs.replace(
            point.settings, trace_dir=None)  # one trace per variant: the first process's
        this = point.replace(settings=settings,
                             ceilings=records[0].ceilings if records else point.ceilings)
        records.append(runner.run(this, progress=progress,
                                  on_record=on_record if index == 0 else None))
        if index > 0 and on_record is not None:
            on_record(merge_processes(records, planned=count))
    return merge_processes(records, planned=count)


def merge_processes(records: Sequence[CompareRecord], *, planned: int | None = None
                    ) -> CompareRecord:
    """One record of the same comparison measured in each of ``records``' processes (see
    the module doc); ``planned``: the processes asked for, when fewer have run yet."""
    if not records:
        raise ValueError("no process records to merge")
    first = records[0]
    names = list(dict.fromkeys(r.variant for record in records for r in record.results))
    rows = []
    for name in names:
        measured = [(i, r) for i, record in enumerate(records)
                    for r in record.results if r.variant == name]
        rows.append(_merged_row(measured, len(records), planned or len(records)))
    # Complete only when every planned process ran to its end: an interrupted run's record
    # (saved after each process) is partial, however complete its processes were.
    done = len(records) >= (planned or len(records)) and all(
        record.status == "complete" for record in records)
    return msgspec.structs.replace(first, results=rows,
                                   status="complete" if done else "partial")


def process_spread(medians: Sequence[float]) -> float | None:
    """(max - min) / median of the processes' medians (``None`` for fewer than two)."""
    return relative_range(medians)


def _merged_row(measured: list[tuple[int, VariantResult]], ran: int,
                planned: int) -> VariantResult:
    """One variant's row over the processes that measured it."""
    of = f"of {ran}" if ran == planned else f"of {ran} run so far ({planned} planned)"
    failed = [(i, r) for i, r in measured if r.status != "ok" or r.latency_ms is None]
    if failed:
        index, row = failed[0]
        return msgspec.structs.replace(row, notes=[
            *row.notes, f"{row.status} in process {index + 1} {of} (this row is that "
                        f"process's; {_measured_it(len(measured) - len(failed))})"])
    first = measured[0][1]
    if len(measured) == 1:
        return first
    lats = [r.latency_ms for _, r in measured if r.latency_ms is not None]  # all: none failed
    samples = [x for lat in lats for x in lat.samples]
    merged = latency(summarize(samples), samples)
    merged.process_medians = [lat.median for lat in lats]
    # Rates go as 1 / median: the first process's, at the merged median.
    scale = lats[0].median / merged.median if merged.median > 0 else None

    def rate(value: float | None) -> float | None:
        return None if value is None or scale is None else value * scale

    faults = [r.minor_faults_per_call for _, r in measured
              if r.minor_faults_per_call is not None]
    dispatch = [r.cpu_dispatch_ms for _, r in measured if r.cpu_dispatch_ms is not None]
    # The first process's notes are the row's, but each process says if it ran contended.
    contended = [f"process {i + 1}: {note}" for i, r in measured for note in r.notes
                 if note.startswith(CONTENDED_NOTE)]
    medians = merged.process_medians
    spread = process_spread(medians)
    said = (f"measured in {len(measured)} processes {of}: medians {min(medians):.4g}-"
            f"{max(medians):.4g} ms" + (f" (spread {spread:.0%})" if spread is not None else ""))
    own = [n for n in first.notes if not n.startswith(CONTENDED_NOTE)]
    return msgspec.structs.replace(
        first, latency_ms=merged,
        device_ms=merged.median if first.device_ms is not None else None,
        cpu_dispatch_ms=statistics.median(dispatch) if dispatch else None,
        minor_faults_per_call=statistics.fmean(faults) if faults else None,
        tflops_per_s=rate(first.tflops_per_s), gbytes_per_s=rate(first.gbytes_per_s),
        flops_of_ceiling=rate(first.flops_of_ceiling),
        bandwidth_of_ceiling=rate(first.bandwidth_of_ceiling),
        notes=[*own, said, *contended])


def _measured_it(count: int) -> str:
    return {0: "no process measured it", 1: "1 other process measured it"}.get(
        count, f"{count} other processes measured it")
