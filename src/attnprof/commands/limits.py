"""``limits``: the largest sequence (or batch) each variant fits in a memory budget, found
by bisection on real runs in memory-capped workers, each confirmed by a measured run,
beside the textbook estimate; the record (kind ``limits``) holds every probe."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from attnprof.outputs import Output
    from attnprof.record.limits import LimitsRecord
    from attnprof.run.limits import Probe

__all__ = ["DEFAULT_MODES", "LimitsProgress", "LimitsRequest", "run"]

#: Modes searched when the request names none: inference and training.
DEFAULT_MODES = ("forward", "forward+backward")


class LimitsProgress(Protocol):
    """What the search shows as it goes (the CLI: a line per probe on stderr)."""

    def searching(self, variant: str, mode: str, size_field: str) -> None:
        """The search for ``variant`` in ``mode`` begins."""

    def probe(self, variant: str, mode: str, size_field: str, probe: Probe) -> None:
        """One probe of that search ended."""


@dataclass(frozen=True, slots=True)
class LimitsRequest:
    """What ``attnprof limits`` is asked: the variants, the size searched and the budget."""

    #: Variant names or ``path/to/file.py:callable``.
    variants: tuple[str, ...]
    #: The size searched.
    field: Literal["seq", "batch"] = "seq"
    #: The Workload fields fixed (``mode`` among them: only that mode is searched); the
    #: searched field may not be one.
    workload: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: The memory each run may use, e.g. ``"8GiB"``; ``None``: what the device has.
    memory_budget: str | None = None
    #: Granularity of the search; ``None``: 64 for seq, 1 for batch.
    step: int | None = None
    #: The largest size tried; ``None``: where q/k/v alone exceed the budget.
    max: int | None = None
    #: A probe running longer counts as not fitting in time, e.g. ``"90s"``; ``None``:
    #: 120 s on CPU, 60 s on CUDA.
    probe_timeout: str | None = None
    #: Seconds of sampling in the confirming run.
    min_time: float = 0.2
    #: Intra-op threads, ``"N"`` or ``"all"``; ``None``: the device's default.
    threads: str | None = None
    #: Where each capped probe runs: ``process`` or ``ray``.
    executor: Literal["process", "ray"] = "process"
    #: The Ray cluster (``executor="ray"`` only); ``None``: RAY_ADDRESS, else a local one.
    ray_address: str | None = None
    #: The record file; ``None``: no file.
    json: str | None = None
    #: Every output of the command line, checked together beforehand; their folders are
    #: made once the request is found sound.
    outputs: tuple[Output, ...] = ()

    def __post_init__(self) -> None:
        """A program's mistakes in the fields, one line each (:mod:`.fields`)."""
        from attnprof.commands.fields import set_names, workload_fields

        set_names(self, "variants")
        workload_fields(self.workload)


def run(request: LimitsRequest, progress: LimitsProgress | None = None) -> LimitsRecord:
    """Search each variant's largest ``request.field`` within the budget, in each mode;
    the limits record. :class:`~attnprof.errors.UsageError` before any probe runs for a
    mistake in the request."""
    from attnprof.commands.saving import RecordFile
    from attnprof.errors import UsageError
    from attnprof.measure.device import memory_capacity_bytes
    from attnprof.measure.environment import collect_environment
    from attnprof.measure.threads import measuring_threads
    from attnprof.outputs import Output, create_folders
    from attnprof.record.limits import LimitsRecord
    from attnprof.run.compare import prepare
    from attnprof.run.limits import find_ceiling
    from attnprof.workload.quantities import parse_bytes, parse_seconds
    from attnprof.workload.settings import (
        Settings,
        TimingPlan,
        check_seconds,
        default_threads,
        parse_threads,
    )

    fields = dict(request.workload)
    size = request.field
    if size in fields:
        raise UsageError(f"--{size} is what limits searches; set --max (and --step) instead")
    step = request.step if request.step is not None else (64 if size == "seq" else 1)
    for flag, value in (("--step", step), ("--max", request.max)):
        if value is not None and value <= 0:
            raise UsageError(f"{flag} must be a positive integer, got {value}")
    check_seconds("--min-time", request.min_time)
    modes = [fields.pop("mode")] if "mode" in fields else list(DEFAULT_MODES)
    base, variants = prepare(None, list(request.variants), **{**fields, size: step})
    budget = (parse_bytes("--memory-budget", request.memory_budget) if request.memory_budget
              else memory_capacity_bytes(base.device))
    timeout = (parse_seconds("--probe-timeout", request.probe_timeout)
               if request.probe_timeout else 60.0 if base.device_type == "cuda" else 120.0)
    # The confirming run is timed on the threads compare would use (one on a CPU unless
    # --threads says), so its latency reads as compare's does.
    threads = (default_threads(base.device_type) if request.threads is None
               else parse_threads(request.threads))
    confirm = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=request.min_time,
                                       min_samples=3, rounds=1),
                       check_accuracy=False, measure_ceilings=False, threads=threads)
    if request.ray_address and request.executor != "ray":
        raise UsageError("--ray-address is for --executor ray; add it or drop the address")
    executor_options = {"address": request.ray_address} if request.executor == "ray" else {}
    # Only now: a mistake found above leaves nothing behind.
    create_folders(request.outputs or ([Output("--json", request.json)] if request.json
                                       else []))
    ceilings = []
    for variant in variants:
        for mode in modes:
            if progress is not None:
                progress.searching(variant.name, mode, size)

            def show(probe: Probe, name: str = variant.name, mode: str = mode) -> None:
                if progress is not None:
                    progress.probe(name, mode, size, probe)

            ceilings.append(find_ceiling(
                base.replace(mode=mode), variant, size, budget, step=step,
                maximum=request.max, probe_timeout_s=timeout, confirm=confirm,
                on_probe=show, executor=request.executor,
                executor_options=executor_options))
    with measuring_threads(threads):  # the environment states the threads it measured on
        environment = collect_environment(base.device)
    record = LimitsRecord(environment=environment, base=base, field=size,
                          budget_bytes=budget, ceilings=ceilings, status="complete")
    RecordFile[LimitsRecord](request.json).save(record)
    return record
