"""Run variants side by side on one workload and collect a comparison record.

Each variant is isolated: a refusal becomes ``unsupported`` with PyTorch's reason, running
out of memory becomes ``oom``, running past ``Settings.variant_timeout_s`` in one phase
becomes ``timeout``, an output off the float64 reference becomes ``wrong``, and any other
exception — of any type: ``KeyboardInterrupt``, ``SystemExit`` or ``GeneratorExit`` from
user code included — becomes ``error`` with its message; only a real stop signal ends the
run (:mod:`attnprof.signals`). A variant that fails after some of its phases finished keeps
what they measured. All variants see the same seeded inputs — checked after each of a
variant's phases and put back if it changed them (:mod:`attnprof.run.guards`) — and the
same torch settings, put back after each phase if it changed them
(:mod:`attnprof.torch_state`); every output's shape and dtype is checked on the warm-up
calls, and every output is checked against one float64 reference per mask. CPU variants
run in the allocator state the settings name (:mod:`attnprof.measure.allocator`).

Variants are timed in interleaved rounds after all of them are built and warmed up (see
:mod:`attnprof.measure.timer`), so a machine that slows down mid-run slows them all alike.
A point runs here, in this process (:func:`~attnprof.run.point_runner.run_point`); an executor
(:mod:`attnprof.run.executors`) may run it elsewhere and hand back the same record. With
``TimingPlan.processes`` above one, the whole point runs in that many fresh worker processes
and their records are merged (:mod:`attnprof.run.processes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attnprof.measure.device import check_against_device, default_device
from attnprof.record.compare import CompareRecord
from attnprof.record.environment import Ceilings
from attnprof.run.executors import Executor
from attnprof.run.point import Point, RecordKind
from attnprof.run.point_runner import OnKept, OnRecord, Progress, run_point
from attnprof.signals import stop_signals_as_interrupts
from attnprof.variants import Variant, resolve_variants
from attnprof.workload.problem import Workload, default_workload
from attnprof.workload.settings import Settings

__all__ = ["OnKept", "OnRecord", "Progress", "Settings", "compare", "compare_prepared", "prepare",
           "run_point"]


def prepare(workload: Workload | None = None,
            variants: Sequence[str | Variant] | None = None,
            **fields: Any) -> tuple[Workload, list[Variant]]:
    """Validate the workload against the device and resolve the variant names.

    Everything a user can get wrong is checked here, before any measurement or output.
    """
    fields = {k: v for k, v in fields.items() if v is not None}
    if workload is None:
        device = fields.setdefault("device", default_device())
        workload = default_workload(device.split(":")[0], **fields)
    elif fields:
        workload = workload.replace(**fields)
    workload = workload.validate()
    check_against_device(workload)
    return workload, resolve_variants(variants, workload)


def compare(workload: Workload | None = None,
            variants: Sequence[str | Variant] | None = None, *,
            settings: Settings | None = None, progress: Progress | None = None,
            on_result: OnRecord | None = None, executor: Executor | None = None,
            kind: RecordKind = "compare", ceilings: Ceilings | None = None,
            **fields: Any) -> CompareRecord:
    """Measure ``variants`` (default: every built-in) on ``workload`` and return the record.

    Workload fields may be given as keywords (``compare(seq=1024, dtype="bf16")``); they
    override ``workload`` or the device's default. ``on_result`` is called with the record
    after every variant, so a caller can save progress as it goes. ``executor`` runs the
    point elsewhere (e.g. :class:`~attnprof.run.executors.process.ProcessExecutor`, a
    worker process a crashing variant cannot take down); by default it runs here, a plain
    call of :func:`~attnprof.run.point_runner.run_point` with the variants as resolved
    here, so :class:`~attnprof.variants.Variant` objects made by the caller run as given.
    ``ceilings`` measured before (``attnprof env``'s cache) are used instead of measuring
    them again.
    """
    # Stop signals are told apart from user code's exceptions from here on (importing a
    # user file included): see attnprof.signals.
    with stop_signals_as_interrupts():
        workload, chosen = prepare(workload, variants, **fields)
        return compare_prepared(workload, chosen, settings=settings, progress=progress,
                                on_result=on_result, executor=executor, kind=kind,
                                ceilings=ceilings)


def compare_prepared(workload: Workload, chosen: Sequence[Variant], *,
                     settings: Settings | None = None, progress: Progress | None = None,
                     on_result: OnRecord | None = None, executor: Executor | None = None,
                     kind: RecordKind = "compare",
                     ceilings: Ceilings | None = None) -> CompareRecord:
    """:func:`compare` of a workload and variants :func:`prepare` returned (a caller that
    prepared them to check everything first does not prepare them twice)."""
    with stop_signals_as_interrupts():
        settings = (settings or Settings()).validate()
        point = Point(workload=workload, variants=tuple(v.name for v in chosen),
                      settings=settings, kind=kind, ceilings=ceilings)
        if settings.plan.processes > 1:  # each process a fresh worker: run/processes.py
            from attnprof.run.processes import run_in_processes

            record = run_in_processes(point, executor, progress=progress,
                                      on_record=on_result)
        elif executor is None:  # here, in this process: the variants as resolved above
            record = run_point(point, list(chosen), progress=progress, on_record=on_result)
        else:
            record = executor.run(point, progress=progress, on_record=on_result)
        if workload.mask_kind == "padding":
            from attnprof.run.padding import padding_waste

            record.padding_waste = padding_waste(record)
            if on_result is not None:  # the saved record gains it too
                on_result(record)
        return record
