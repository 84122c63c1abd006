"""``model``: how much of a whole model is attention, per layer and component, in each
phase and under each attention implementation; and the same over lists of sizes, every
combination its own model, the implementations ranked within each.

The model is built and its attention located before anything is measured or written, so
a mistake is one :class:`~attnprof.errors.UsageError` and no output file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from attnprof.commands.pricing import PriceRequest
    from attnprof.outputs import Output
    from attnprof.record.model import ModelRecord, ModelSettings
    from attnprof.workload.model_spec import ModelSpec
    from attnprof.workload.settings import CpuAllocator

__all__ = ["ModelProgress", "ModelRequest", "run", "run_grid"]


class RunBar(Protocol):
    """A progress display over a model's runs (implementation × phase)."""

    def update(self, run: str, what: str) -> None:
        """``run`` is doing ``what`` (``done`` ends it)."""


#: Opens a display over the runs' names for the block (the CLI: ``ModelRunProgress``).
ModelProgress = Callable[[list[str]], AbstractContextManager[RunBar]]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What ``attnprof model`` is asked: the model, how to measure it, where its record and
    traces go."""

    #: The model: a built-in, a local folder or a factory, its sizes, phases and
    #: implementations (validated when it is built).
    spec: ModelSpec
    #: Seconds of sampling per run, split between labels off and on.
    min_time: float = 0.5
    #: Interleaved rounds of labels-off/labels-on samples.
    rounds: int = 4
    #: Seed of the weights and inputs.
    seed: int = 0
    #: Steps per trace (the figures are those of the step whose attention share is the
    #: median).
    trace_steps: int = 3
    #: A folder to keep each run's trace in; ``None``: not kept.
    trace_dir: str | None = None
    #: The C allocator's state on CPU.
    cpu_allocator: CpuAllocator = "reuse"
    #: Intra-op threads, ``"N"`` or ``"all"``; ``None``: the device's default.
    threads: str | None = None
    #: Where the implementations run: in this process, or in a worker process.
    executor: Literal["inline", "process"] = "inline"
    #: With the process executor: seconds without progress before the worker is killed.
    timeout: float | None = None
    #: The record file, saved after every run; ``None``: no file.
    json: str | None = None
    #: Every output of the command line, checked together beforehand; their folders are
    #: made once the model is built.
    outputs: tuple[Output, ...] = ()
    #: The machine's price (``--price``, ``--prices``): cost per step and per million
    #: tokens of each run in the record (one model run; a grid refuses it).
    price: PriceRequest | None = None


def run(request: ModelRequest, progress: ModelProgress | None = None) -> ModelRecord:
    """Profile the model of ``request.spec``; the model record, saved to ``request.json``
    after every run. :class:`~attnprof.errors.UsageError` before anything is measured
    for a mistake (the model is built first)."""
    from attnprof.commands.saving import RecordFile
    from attnprof.outputs import Output, create_folders
    from attnprof.run.executors import get_executor
    from attnprof.run.model import prepare_model, run_names
    from attnprof.run.point import ModelPoint

    settings = _settings(request)
    prepared = prepare_model(request.spec, seed=request.seed)  # every user mistake fails here
    # Only now: a mistake found above leaves nothing behind.
    create_folders(request.outputs or [
        *([Output("--json", request.json)] if request.json else []),
        *([Output("--trace", request.trace_dir, folder=True)] if request.trace_dir else [])])
    record_file: RecordFile[ModelRecord] = RecordFile(request.json)
    # In this process, the model built above runs as it is; a worker builds its own.
    options: dict[str, object] = ({"model": prepared} if request.executor == "inline" else
                                  {} if request.timeout is None else
                                  {"idle_timeout_s": request.timeout})
    executor = get_executor(request.executor, **options)
    names = list(run_names(prepared[0], prepared[1]))
    with progress(names) if progress is not None else nullcontext() as bar:
        record = executor.run_model(ModelPoint(spec=prepared[0], settings=settings),
                                    progress=bar.update if bar is not None else None,
                                    on_record=record_file.save if request.json else None)
    if request.price is not None:
        from attnprof.commands.pricing import attach_price

        attach_price(request.price, record, record.environment.device_name,
                     record.model.device.partition(":")[0])
        if record.price is not None and request.json:
            record_file.save(record)  # the price joins the saved record
    return record


def run_grid(request: ModelRequest, sizes: Sequence[Mapping[str, int | None]],
             progress: ModelProgress | None = None) -> list[ModelRecord]:
    """:func:`run` for each combination of ``sizes`` (the fields of ``request.spec`` each
    replaces; ``None``: left as it is), one after another, every spec validated before
    any run; one record each, none saved (a grid has no single record)."""
    from attnprof.errors import UsageError
    from attnprof.run.executors import get_executor
    from attnprof.run.model import prepare_model, run_names
    from attnprof.run.point import ModelPoint

    if request.timeout is not None:
        raise UsageError("--timeout takes one model run; with lists of sizes, leave it out")
    if request.price is not None:
        raise UsageError("--price/--prices cost one model run; with lists of sizes, leave "
                         "them out (or run each size alone)")
    settings = _settings(request)
    specs = [request.spec.replace(**{k: v for k, v in size.items() if v is not None}).validate()
             for size in sizes]
    records = []
    for spec in specs:
        prepared = prepare_model(spec, seed=request.seed)
        options: dict[str, object] = ({"model": prepared} if request.executor == "inline"
                                      else {})
        executor = get_executor(request.executor, **options)
        names = list(run_names(prepared[0], prepared[1]))
        with progress(names) if progress is not None else nullcontext() as bar:
            records.append(executor.run_model(
                ModelPoint(spec=prepared[0], settings=settings),
                progress=bar.update if bar is not None else None))
    return records


def _settings(request: ModelRequest) -> ModelSettings:
    """The runs' settings, every value checked (one line naming the flag)."""
    from attnprof.errors import UsageError
    from attnprof.record.model import ModelSettings
    from attnprof.workload.settings import (
        TimingPlan,
        check_seconds,
        default_threads,
        parse_threads,
    )

    for flag, value in (("--trace-steps", request.trace_steps), ("--rounds", request.rounds)):
        if value <= 0:
            raise UsageError(f"{flag} must be a positive integer, got {value}")
    check_seconds("--min-time", request.min_time)
    if request.timeout is not None:
        check_seconds("--timeout", request.timeout)
        if request.executor != "process":
            raise UsageError(f"--timeout {request.timeout:g} needs --executor process: in "
                             "this process nothing can stop a hung implementation")
    if not 0 <= request.seed < 2**63:
        raise UsageError(f"--seed must be between 0 and 2**63-1, got {request.seed}")
    threads = (default_threads(request.spec.device) if request.threads is None
               else parse_threads(request.threads))
    return ModelSettings(plan=TimingPlan(warmup_s=0.0, min_time_s=request.min_time,
                                         min_samples=4, max_samples=200,
                                         min_warmup_calls=1, rounds=request.rounds),
                         seed=request.seed, trace_steps=request.trace_steps,
                         trace_dir=request.trace_dir, cpu_allocator=request.cpu_allocator,
                         threads=threads)
