"""Profile a whole model: each attention implementation × each phase, measured, traced
and attributed per layer, into one :class:`~attnprof.record.model.ModelRecord`.

For every (implementation, phase) the step is timed twice in interleaved rounds — without
attnprof's labels (the latency reported) and with them (so their cost is measured, not
assumed), and with two implementations or more, in the same rounds as the phase's other
implementations (:mod:`attnprof.run.model_rounds`), which then tie or rank
(:mod:`attnprof.run.model_ranks`) — then its peak memory is taken, a short trace is
captured with the labels on and analysed
(:func:`attnprof.analysis.attribution.attribute_model`; retaken while the moment was
noisy, :func:`_trace`), and, in decode, the cache's growth is measured beside what the
config says it must be. The same weights and inputs serve every implementation; each
one's output is compared with the reference (eager when it is run, else the first). A
refused implementation is a row with status ``unsupported`` and transformers' reason; a
phase that raises is a row with its error; the others still run.
"""

from __future__ import annotations

import contextlib
import statistics
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from attnprof.errors import UsageError
from attnprof.knowledge.capture_noise import contended, faulted, noise_phrases
from attnprof.measure.allocator import release_free_memory, reserve_heap, set_cpu_allocator
from attnprof.measure.capture import capture_trace, trace_file_name
from attnprof.measure.device import check_device, check_dtype
from attnprof.measure.environment import collect_environment
from attnprof.measure.memory import profile_step
from attnprof.measure.threads import measuring_threads
from attnprof.measure.timer import round_sizes, warm_up
from attnprof.models.implementations import (
    Refused,
    default_implementation,
    snapshot,
    switch_implementation,
    with_pin,
)
from attnprof.models.instrument import labelled
from attnprof.models.loaded import LoadedModel, as_call_inputs, first_tensor, input_sizes
from attnprof.models.locate import Located, locate
from attnprof.models.phases import build_step, unsupported_phase
from attnprof.models.windows import probe_calls
from attnprof.record.model import ModelRecord, ModelSettings, PhaseRun
from attnprof.run.measurements import caught_messages
from attnprof.run.model_ranks import rank_runs, round_medians
from attnprof.run.model_rounds import RoundSamples, time_alone, time_in_rounds
from attnprof.run.model_rows import (
    PhaseMeasurements,
    attention_calls,
    attention_rows,
    drop_lost_reference,
    failed_run,
    kv_cache_report,
    layer_deltas,
    model_info,
    not_as_requested,
    phase_row,
    relative_error,
)
from attnprof.scratch import scratch_dir
from attnprof.signals import reraise_stop
from attnprof.workload.model_spec import ModelSpec
from attnprof.workload.settings import CaptureSpec

if TYPE_CHECKING:
    import torch

__all__ = ["ModelProgress", "prepare_model", "profile_model"]

#: Trace captures a run takes at most while the traced steps were noisy (see
#: :func:`_trace`): each costs ``trace_steps + 2`` steps and an analysis.
_TRACE_TRIES = 3

ModelProgress = Callable[[str, str], None]
"""Called as ``progress("sdpa/prefill", what)``; ``what`` is ``done`` when a run ends."""
OnRecord = Callable[[ModelRecord], None]


def prepare_model(spec: ModelSpec, *, seed: int = 0) -> tuple[ModelSpec, LoadedModel, Located]:
    """Validate, build and locate: every user mistake fails here, before any measurement."""
    spec = spec.validate()
    check_device(spec.device)
    check_dtype(spec.device, spec.dtype)
    from attnprof.models.sources import load_model

    loaded = load_model(spec, seed=seed)
    return spec, loaded, _located(loaded, spec)


def _located(loaded: LoadedModel, spec: ModelSpec) -> Located:
    def forward() -> object:  # one forward, from which locate reads what each part does
        return loaded.model(*loaded.args, **loaded.kwargs)

    located = locate(loaded.model, spec.attention_module, probe=forward)
    if not located.attention:
        hint = (f"--attention-module {spec.attention_module!r} matched no module; "
                if spec.attention_module else "")
        raise UsageError(f"no attention module found in {loaded.source} "
                         f"({type(loaded.model).__name__}): {hint}name yours with "
                         "--attention-module REGEX (a module path or class name)")
    return located


def profile_model(model: torch.nn.Module | None = None, inputs: Any = None, *,
                  spec: ModelSpec | None = None, settings: ModelSettings | None = None,
                  progress: ModelProgress | None = None, on_record: OnRecord | None = None,
                  prepared: tuple[ModelSpec, LoadedModel, Located] | None = None,
                  only: Sequence[str] | None = None, **options: Any) -> ModelRecord:
    """Profile ``model`` on ``inputs`` (or the model ``spec`` names) and return the record.

    ``inputs`` is a tensor, a tuple of positional arguments or a dict of keyword arguments.
    Options are :class:`~attnprof.workload.model_spec.ModelSpec` fields:
    ``implementations=("eager", "sdpa")``, ``phases=("prefill", "train")``,
    ``attention_module="MyAttention"``, ``cache_len``, ``new_tokens``. ``on_record`` sees
    the record after every run, so a caller can save progress as it goes. ``only``: the
    implementations to measure this time (a worker that takes over from one that died);
    the reference is still chosen among all of them.
    """
    settings = settings or ModelSettings()
    if prepared is not None:
        spec, loaded, located = prepared
    elif model is not None:
        loaded = _given(model, inputs)
        spec = ModelSpec(source=f"python:{type(model).__name__}", device=loaded.device,
                         dtype=loaded.dtype, **options).validate()
        located = _located(loaded, spec)
    else:
        if spec is None:
            raise UsageError("profile_model needs a model and its inputs, or a spec")
        spec, loaded, located = prepare_model(spec.replace(**options), seed=settings.seed)
    # The settings' intra-op threads for everything measured, the environment included
    # (one on a CPU from the command line: see attnprof.measure.threads).
    with measuring_threads(settings.threads):
        # Before anything is measured, as compare does: freed memory reused (by default), so
        # where page faults land does not decide which component a millisecond goes to.
        set_cpu_allocator(settings.cpu_allocator)
        release_free_memory()  # what building the model freed: not what the runs should reuse
        default = default_implementation(loaded)
        impls = list(spec.implementations) or [default]
        record = ModelRecord(environment=collect_environment(loaded.device), spec=spec,
                             model=model_info(loaded, default if loaded.is_transformers else None),
                             settings=settings, attention=attention_rows(located))
        if on_record is not None:  # the header, before any run: a worker's parent needs it
            on_record(record)
        restore = snapshot(loaded)
        try:
            with _trace_dir(settings.trace_dir) as folder:
                reference, ref_out = _reference(loaded, located, impls)
                running = impls if only is None else [i for i in impls if i in only]
                timed = time_in_rounds(loaded, located, running, spec.phases, settings,
                                       _cache_len(spec, loaded), progress or _say_nothing)
                for impl in running:
                    _run_implementation(loaded, located, spec, settings, impl, folder, record,
                                        (reference, ref_out), progress, on_record, timed)
        finally:
            restore()
        drop_lost_reference(record.runs, reference)
        rank_runs(record.runs)
        record.deltas = layer_deltas(record.runs, reference)
        record.status = "complete"
        if on_record is not None:
            on_record(record)
        return record


def _given(model: Any, inputs: Any) -> LoadedModel:
    import torch

    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"profile_model takes an nn.Module, got {type(model).__name__}")
    args, kwargs = as_call_inputs(inputs, type(model).__name__)
    param = next(model.parameters(), None)
    dtype = str(param.dtype).removeprefix("torch.") if param is not None else "float32"
    device = str(param.device) if param is not None else "cpu"
    family = "module"
    sizes: dict[str, int | None] = {}
    if hasattr(model, "config"):
        from attnprof.models.hf import family_of
        from attnprof.models.sizes import config_sizes

        family, sizes = family_of(model.config), config_sizes(model.config)
    read, shape = input_sizes(args, kwargs)
    model.eval()
    return LoadedModel(model=model, args=args, kwargs=kwargs, source=type(model).__name__,
                       family=family, weights="factory",  # type: ignore[arg-type]
                       sizes={**sizes, **read}, dtype=dtype, device=device,
                       input_shape=shape)


def _say_nothing(name: str, what: str) -> None:
    """No progress to report to."""


def _cache_len(spec: ModelSpec, loaded: LoadedModel) -> int:
    """Decode: the tokens in the KV cache (``--cache-len``, else the input's length)."""
    return spec.cache_len or int(loaded.sizes.get("seq") or 128)


@contextlib.contextmanager
def _trace_dir(folder: str | None) -> Iterator[Path]:
    if folder is not None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        yield Path(folder)
        return
    with scratch_dir("attnprof-model-") as tmp:  # removed by a worker's parent if it dies
        yield Path(tmp)


def _reference(loaded: LoadedModel, located: Located,
               impls: list[str]) -> tuple[str, torch.Tensor | None]:
    """The implementation the others are compared with — eager when it is run, else the
    first — and its output; the next one that runs when it is refused."""
    order = sorted(impls, key=lambda i: i != "eager")
    if len(impls) < 2:
        return order[0], None
    for impl in order:
        out = _output(loaded, located, impl)
        if out is not None:
            return impl, out
    return order[0], None


def _output(loaded: LoadedModel, located: Located, impl: str) -> torch.Tensor | None:
    """The reference output (prefill inputs) under ``impl``; ``None`` if it cannot run."""
    import torch

    try:
        switch_implementation(loaded, impl, located)
        with torch.no_grad():
            out = with_pin(impl, lambda: loaded.model(*loaded.args, **loaded.kwargs))()
    except Exception:  # its own row will say why
        return None
    tensor = first_tensor(out)
    return tensor.detach().clone() if tensor is not None else None


def _run_implementation(loaded: LoadedModel, located: Located, spec: ModelSpec,
                        settings: ModelSettings, impl: str, folder: Path,
                        record: ModelRecord, reference: tuple[str, torch.Tensor | None],
                        progress: ModelProgress | None, on_record: OnRecord | None,
                        timed: dict[tuple[str, str], RoundSamples]) -> None:
    # Said before anything of ``impl`` runs: a worker that dies from here on died in it.
    _say(progress, f"{impl}/{spec.phases[0]}", "switching to it")
    try:
        switch_implementation(loaded, impl, located)
        refused = None
    except Refused as exc:
        refused = str(exc)
    error = None
    if refused is None and reference[1] is not None and impl != reference[0]:
        out = _output(loaded, located, impl)
        error = relative_error(out, reference[1]) if out is not None else None
    for phase in spec.phases:
        name = f"{impl}/{phase}"
        why = refused or unsupported_phase(loaded, phase)
        if why:
            row = PhaseRun(implementation=impl, phase=phase, status="unsupported", reason=why)
        else:
            row = _run_phase(loaded, located, spec, settings, impl, phase, folder,
                             (error, reference[0] if error is not None else None),
                             _announcer(progress, name), timed.get((impl, phase)))
        record.runs.append(row)
        _say(progress, name, "done")
        if on_record is not None:
            on_record(record)


def _announcer(progress: ModelProgress | None, name: str) -> Callable[[str], None]:
    def say(what: str) -> None:
        _say(progress, name, what)

    return say


def _say(progress: ModelProgress | None, name: str, what: str) -> None:
    if progress is not None:
        progress(name, what)


def _run_phase(loaded: LoadedModel, located: Located, spec: ModelSpec,
               settings: ModelSettings, impl: str, phase: str, folder: Path,
               accuracy: tuple[float | None, str | None],
               say: Callable[[str], None], timed: RoundSamples | None) -> PhaseRun:
    seen: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            try:
                m = _measure(loaded, located, spec, settings, impl, phase, folder, say,
                             timed)
            finally:
                seen = caught_messages(caught)
    except UsageError as exc:
        return PhaseRun(implementation=impl, phase=phase, status="unsupported",
                        reason=str(exc), warnings=seen)
    except BaseException as exc:  # isolation: a failing run is a row, the others run
        reraise_stop(exc)  # (whatever its type, unless a stop signal arrived)
        return failed_run(impl, phase, exc, seen, loaded.device.split(":")[0])
    m.error, m.reference = accuracy
    m.warnings = seen
    if (why := not_as_requested(impl, m.attribution)) is not None:
        return PhaseRun(implementation=impl, phase=phase, status="unsupported", reason=why,
                        attribution=m.attribution, trace=m.trace, warnings=seen,
                        notes=m.notes)
    return phase_row(impl, phase, m, loaded.dtype)


def _measure(loaded: LoadedModel, located: Located, spec: ModelSpec,
             settings: ModelSettings, impl: str, phase: str, folder: Path,
             say: Callable[[str], None], timed: RoundSamples | None) -> PhaseMeasurements:
    say("building the step")
    cache_len = _cache_len(spec, loaded)
    step = build_step(loaded, phase, cache_len=cache_len)
    call = with_pin(impl, step.call)
    device, plan = loaded.device, settings.plan
    m = PhaseMeasurements(tokens=step.tokens)
    say("warming up")
    quick = msgspec.structs.replace(plan, min_warmup_calls=1, warmup_s=0.0)
    # Timed already with the other implementations: this step is warmed only for the
    # phases below.
    bare = warm_up(call, device=device, plan=plan if timed is None else quick)
    # Every attention call of a step, once: lengths, windows and what the masks admitted.
    seen = probe_calls(call, located)
    m.calls = attention_calls(seen, loaded, phase)
    with labelled(located):
        warm_up(call, device=device, plan=quick)
    if timed is None:
        timed = time_alone(call, located, device, round_sizes(bare.samples, plan.rounds),
                           say)
    else:
        m.round_medians = round_medians(timed.bare)
    for off, on in zip(timed.bare, timed.labelled, strict=True):
        m.bare_ms.extend(off)
        m.labelled_ms.extend(on)
        if statistics.median(off) > 0:  # the labels' cost in this round: its spread
            m.round_overheads.append(statistics.median(on) / statistics.median(off) - 1.0)
    say("memory")
    m.memory = profile_step(call, device, settle=step.settles)
    if step.growth is not None:
        growth = step.growth
        held = with_pin(impl, lambda: growth(spec.new_tokens))()
        m.kv_cache = kv_cache_report(loaded, cache_len, spec.new_tokens, held,
                                     [c.window for c in seen if not c.cross])
    path = folder / trace_file_name(f"model-{impl}-{phase}")
    m.attribution, retaken = _trace(call, located, settings, path, say,
                                    {"model": loaded.source, "implementation": impl,
                                     "phase": phase}, device, settle=step.settles)
    m.notes.extend(retaken)
    if settings.trace_dir is not None:
        m.trace = str(path)
    return m


def _trace(call: Callable[[], object], located: Located, settings: ModelSettings, path: Path,
           say: Callable[[str], None], metadata: dict[str, Any],
           device: str, *, settle: bool = False) -> tuple[Any, list[str]]:
    """Capture and attribute the labelled trace; retaken while it was noisy, keeping the
    quietest capture at ``path``. Returns its attribution and a note per retake.

    A trace records the moment it was taken (:mod:`attnprof.knowledge.capture_noise`).
    While another job runs, every parallel op waits for its parked threads and the step's
    shares change; such episodes pass, so a retake often finds the machine quiet. In a
    process's first profiler sessions the profiler's buffers push the step's large tensors
    onto fresh pages, faults an untraced step never pays; before a retake the heap is
    grown by twice what the last capture faulted, so the next session finds the room
    already in place. A capture still noisy after :data:`_TRACE_TRIES` is kept, and its
    attribution carries the finding that says why. ``settle``: the step settles before it
    is traced (:attr:`~attnprof.models.phases.PhaseStep.settles`).
    """
    region = f"model/{metadata['implementation']}/{metadata['phase']}"
    best: tuple[tuple[bool, float, float], Any] | None = None
    notes: list[str] = []
    for attempt in range(_TRACE_TRIES):
        say("tracing" if attempt == 0 else f"tracing again (try {attempt + 1} of "
            f"{_TRACE_TRIES}): the last trace was noisy")
        candidate = path.with_name(f"try{attempt}-{path.name}")
        with labelled(located):
            capture_trace(call, region, device, candidate,
                          CaptureSpec(steps=settings.trace_steps, wait=0, warmup=1),
                          metadata=metadata, untraced_faults=True, settle=settle)
        say("analysing the trace")
        attribution = _attribute(candidate)
        wait = attribution.cpu_wait if attribution is not None else None
        extra = attribution.extra_fault_bytes if attribution is not None else None
        noisy = contended(wait) or faulted(extra)
        rank = (noisy, wait or 0.0, extra or 0.0)
        if best is None or rank < best[0]:
            candidate.replace(path)
            best = (rank, attribution)
        else:
            candidate.unlink()
        if not noisy or attempt == _TRACE_TRIES - 1:
            break  # a capture still noisy now carries its finding
        notes.append(f"trace {attempt + 1} retaken: {_noise(wait, extra)}")
        if faulted(extra):
            assert extra is not None
            reserve_heap(int(2 * extra * (settings.trace_steps + 1)))
    assert best is not None
    return best[1], notes


def _noise(wait: float | None, extra: float | None) -> str:
    return " and ".join(noise_phrases(wait, extra, "its steps"))


def _attribute(path: Path) -> Any:
    from attnprof.analysis.analyze import analyze_trace
    from attnprof.trace import load_trace

    return analyze_trace(load_trace(path)).model


def run_names(spec: ModelSpec, loaded: LoadedModel) -> Sequence[str]:
    """The ``implementation/phase`` names a run will go through (for a progress bar)."""
    impls = list(spec.implementations) or [default_implementation(loaded)]
    return [f"{i}/{p}" for i in impls for p in spec.phases]
