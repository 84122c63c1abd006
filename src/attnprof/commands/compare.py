"""``compare``: measure attention variants side by side on one workload (the default
command), and what the measuring commands share (``profile`` and ``check`` measure
through :func:`measure` too).

Everything a user can get wrong is checked first — the budgets file, the flags' own
values (before torch is imported: a typo's answer takes a tenth of a second, not two),
then the workload against the device and the variant names — and only then are the
output folders made and anything measured. The record is saved to its file after every
variant (:class:`~attnprof.commands.saving.RecordFile`), so a stopped run keeps what
finished, and once more at the end with the budgets' verdict and the price.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from attnprof.commands.saving import RecordFile
from attnprof.workload.settings import DEFAULT_VARIANT_TIMEOUT_S, CpuAllocator

if TYPE_CHECKING:
    from attnprof.commands.pricing import PriceRequest
    from attnprof.outputs import Output
    from attnprof.record.compare import CompareRecord
    from attnprof.run.point import RecordKind
    from attnprof.workload.settings import Settings

__all__ = ["CompareRequest", "MeasureProgress", "Sampling", "measure", "run", "variant_files",
           "variant_names"]


class VariantBar(Protocol):
    """A progress display over the variants of one run."""

    def update(self, variant: str, phase: str) -> None:
        """``variant`` reached ``phase`` (``ready`` and ``done`` are its two steps)."""


class MeasureProgress(Protocol):
    """What a measuring command shows as it goes (the CLI's:
    :class:`~attnprof.render.progress.CommandProgress`); ``None``: nothing, as a program
    calling the API wants."""

    def variants(self, names: list[str]) -> AbstractContextManager[VariantBar]:
        """A bar over ``names``, shown while the block runs."""

    def note(self, text: str) -> None:
        """A line worth the user's attention that is no error (a price not found)."""


@dataclass(frozen=True, slots=True)
class Sampling:
    """How a measuring command samples (the flags ``--min-time`` ... ``--executor``)."""

    #: Seconds of sampling per variant; ``None``: the device's default (0.4 s CPU, 1 s CUDA).
    min_time_s: float | None = None
    #: Interleaved rounds the variants' samples are spread over.
    rounds: int = 5
    #: Fresh processes the whole comparison is measured in, one after another.
    processes: int = 1
    #: Seed of the inputs.
    seed: int = 0
    #: Intra-op threads, ``"N"`` or ``"all"``; ``None``: the device's default (1 on CPU).
    threads: str | None = None
    #: The C allocator's state CPU variants are measured in: reuse, fresh or system.
    cpu_allocator: CpuAllocator = "reuse"
    #: Seconds one variant may spend in one phase (0: no limit).
    variant_timeout_s: float = DEFAULT_VARIANT_TIMEOUT_S
    #: Where the variants run: ``inline`` (this process) or ``process`` (a worker).
    executor: str = "inline"

    def settings(self, device_type: str, *, trace_dir: str | None = None,
                 trace_steps: int = 3) -> Settings:
        """The run's :class:`~attnprof.workload.settings.Settings` on a ``device_type``
        device, validated (:class:`~attnprof.errors.UsageError` names the flag)."""
        from attnprof.workload.settings import (
            CaptureSpec,
            Settings,
            TimingPlan,
            check_seconds,
            default_min_time,
            default_threads,
            parse_threads,
        )

        min_time = (self.min_time_s if self.min_time_s is not None
                    else default_min_time(device_type))
        check_seconds("--min-time", min_time)
        check_seconds("--variant-timeout", self.variant_timeout_s, allow_zero=True)
        threads = (default_threads(device_type) if self.threads is None
                   else parse_threads(self.threads))
        return Settings(plan=TimingPlan(min_time_s=min_time, rounds=self.rounds,
                                        processes=self.processes), seed=self.seed,
                        trace_dir=trace_dir, trace=CaptureSpec(steps=trace_steps),
                        cpu_allocator=self.cpu_allocator,
                        variant_timeout_s=self.variant_timeout_s or None,
                        threads=threads).validate()


@dataclass(frozen=True, slots=True)
class CompareRequest:
    """What ``attnprof compare`` is asked: the variants, the workload, how to measure,
    where the record goes, and what to judge it by."""

    #: Variant names or ``path/to/file.py:callable``; empty: every built-in (not opt-in).
    variants: tuple[str, ...] = ()
    #: The :class:`~attnprof.workload.problem.Workload` fields given (``seq=1024``,
    #: ``dtype="bf16"``, ``mask="padding"``, ...); the rest: the device's defaults.
    workload: Mapping[str, Any] = field(default_factory=dict)
    timing: Sampling = field(default_factory=Sampling)
    #: The record file, saved after every variant and at the end; ``None``: no file.
    json: str | None = None
    #: A folder for one torch.profiler trace per variant; ``None``: no traces.
    trace_dir: str | None = None
    trace_steps: int = 3
    #: A budgets file (TOML) the rows are judged by (the verdict joins the record).
    budgets: str | None = None
    #: The machine's price (``--price``, ``--prices``): cost columns in the record.
    price: PriceRequest | None = None
    #: The results store whose cached ceilings (``attnprof env``) the run reuses
    #: (``None``: ``$ATTNPROF_STORE``, else the default one); ``no_store``: none.
    store: str | None = None
    no_store: bool = False
    #: Every output of the command line, checked together beforehand
    #: (:func:`~attnprof.cli.planning.plan_outputs`): their folders are made once the
    #: request is found sound; empty: the record file's and the trace folder's.
    outputs: tuple[Output, ...] = ()

    def __post_init__(self) -> None:
        """A program's mistakes in the fields, one line each (:mod:`.fields`)."""
        from attnprof.commands.fields import set_names, workload_fields

        set_names(self, "variants")
        workload_fields(self.workload)


def run(request: CompareRequest, progress: MeasureProgress | None = None) -> CompareRecord:
    """Measure ``request.variants`` side by side on one workload; the comparison record
    (kind ``compare``), with the budgets' verdict and the price when asked for.

    :class:`~attnprof.errors.UsageError` for a mistake in the request, raised before
    anything is measured or written. A stop (Ctrl-C, SIGTERM) keeps the variants that
    finished in ``request.json``.
    """
    budgets = None
    if request.budgets:  # a malformed file fails before anything is measured
        from attnprof.workload.budgets import load_budgets

        budgets = load_budgets(request.budgets)
    record_file: RecordFile[CompareRecord] = RecordFile(request.json)
    record = measure(request.variants, request.workload, request.timing, kind="compare",
                     record_file=record_file, trace_dir=request.trace_dir,
                     trace_steps=request.trace_steps, outputs=request.outputs,
                     store=request.store, no_store=request.no_store, progress=progress)
    if budgets is not None:
        from attnprof.analysis.budgets import check_budgets, measured_rows

        record.budgets = check_budgets(budgets, measured_rows(record),
                                       source=request.budgets or "")
    if request.price is not None:
        from attnprof.commands.pricing import price_of

        record.price, unpriced = price_of(request.price, record.environment.device_name,
                                          record.workload.device_type)
        if unpriced and progress is not None:
            progress.note(unpriced)
    if record.budgets is not None or record.price is not None:
        record_file.save(record)  # the verdict and the price join the saved record
    return record


def measure(variants: Sequence[str], workload: Mapping[str, Any], timing: Sampling, *,
            kind: RecordKind, record_file: RecordFile[CompareRecord], trace_dir: str | None = None,
            trace_steps: int = 3, outputs: Sequence[Output] = (), store: str | None = None,
            no_store: bool = True, progress: MeasureProgress | None = None
            ) -> CompareRecord:
    """Check everything, then measure ``variants`` on the ``workload`` fields given,
    saving the record to ``record_file`` after every variant: what compare, profile and
    check share. ``outputs``: the command line's plan, whose folders are made only once
    nothing above found a mistake."""
    from attnprof.outputs import Output, create_folders
    from attnprof.workload.problem import Workload, check_given

    # A mistake in the flags themselves is said before torch is imported (2 s of a typo's
    # answer): the workload's values the user gave, and the timing flags.
    check_given(**workload)
    assumed = Workload(device=workload.get("device") or "cpu").device_type
    settings = timing.settings(assumed, trace_dir=trace_dir, trace_steps=trace_steps)

    from attnprof.run.compare import compare_prepared, prepare
    from attnprof.run.executors import get_executor
    from attnprof.signals import stop_signals_as_interrupts

    with stop_signals_as_interrupts():  # a user's variant file is imported here
        prepared, chosen = prepare(None, list(variants) or None, **workload)
    if prepared.device_type != assumed:  # no --device, and CUDA here: its defaults
        settings = _device_defaults(settings, timing, prepared.device_type)
    if not outputs:
        outputs = [*([Output("--json", record_file.path)] if record_file.path else []),
                   *([Output("--trace", trace_dir, folder=True)] if trace_dir else [])]
    create_folders(outputs)  # only now: a mistake found above leaves nothing behind
    executor = None if timing.executor == "inline" else get_executor(timing.executor)
    ceilings = None
    if settings.measure_ceilings:
        from attnprof.commands.saving import cached_ceilings

        ceilings = cached_ceilings(store, no_store, prepared, settings.threads)
    names = [v.name for v in chosen]
    bar: AbstractContextManager[VariantBar | None] = (
        progress.variants(names) if progress is not None else nullcontext())
    with bar as shown, record_file.kept_on_stop(
            lambda _, path: f"interrupted; finished variants are in {path}",
            "interrupted; no variant had finished, {path} not written"):
        update: Callable[[str, str], None] | None = shown.update if shown else None
        return compare_prepared(prepared, chosen, settings=settings, progress=update,
                                on_result=record_file.save if record_file.path else None,
                                executor=executor, kind=kind, ceilings=ceilings)


def _device_defaults(settings: Settings, timing: Sampling, device_type: str) -> Settings:
    """``settings`` with the defaults that depend on the device (sampling time, threads)
    those of ``device_type``, where the request left them to the device."""
    import msgspec

    from attnprof.workload.settings import default_min_time, default_threads

    plan = settings.plan
    if timing.min_time_s is None:
        plan = msgspec.structs.replace(plan, min_time_s=default_min_time(device_type))
    threads = default_threads(device_type) if timing.threads is None else settings.threads
    return msgspec.structs.replace(settings, plan=plan, threads=threads).validate()


def variant_names(variants: Sequence[str]) -> list[str]:
    """The names a run will measure, as :func:`~attnprof.variants.resolve_variants` reads
    them, without importing any user file."""
    if not variants:
        from attnprof.variants import REGISTRY

        return list(REGISTRY)
    return list(dict.fromkeys(n.strip() for n in variants if n.strip()))


def variant_files(names: Sequence[str]) -> list[str]:
    """The user's variant files (``path/to/file.py:fn``): inputs no output may replace."""
    targets = (name.rpartition(":")[0] for name in names if ":" in name)
    return [t for t in targets if t and os.path.isfile(t)]
