"""``attnprof.capture``: profile the user's own training (or inference) loop, in place.

::

    with attnprof.capture(model, out="runs/", label="baseline") as cap:
        for batch in loader:
            loss = model(**batch).loss; loss.backward(); opt.step(); opt.zero_grad()
            cap.step()
    cap.record      # an ``analyze`` record: attention per layer and component, findings

On entry the attention modules are located and labelled as ``attnprof model`` labels them
(:func:`~attnprof.models.locate.locate`, :func:`~attnprof.models.instrument.labelled`),
one label's cost is timed (:mod:`attnprof.measure.label_cost`) and torch.profiler starts
on ``schedule(wait, warmup, active)``; ``cap.step()`` is ``profiler.step()``. Once the
active steps are recorded the trace is written (gzip'd Chrome trace) and the labels and
the profiler are taken off, so the rest of the loop runs as it would without attnprof. On
exit the trace is analysed (:mod:`attnprof.run.capture_record`), the record written beside
it and stored. A loop that raises, or ends before the schedule's last step, still leaves
what was recorded: the record is ``partial`` and says why; the loop's exception comes out
unchanged. Nothing of the model or of torch's settings is left changed: the labels are
instance attributes and function patches removed on the way out, and attnprof's own work
(the label timing, the analysis) runs under :class:`~attnprof.torch_state.TorchState`.

A torch.compile'd model is captured without labels (:func:`compiled_note`): a label's
check for a running profiler breaks a compiled graph at every labelled module, so what ran
would not be the user's compiled model; its record has the trace's own figures and no
per-layer table, and says why. Activation checkpointing and autocast need nothing: a
recomputed forward runs its modules' labels again, inside the backward.

Under DDP every rank captures into the same run folder (rank 0's run id, broadcast), one
trace per rank, so ``attnprof analyze FOLDER`` reads them as the ranks of one run; only
rank 0 stores its record.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import warnings
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from attnprof.errors import UsageError
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.base import new_run_id
from attnprof.run.capture_record import (
    StoreChoice,
    analyse_capture,
    check_store,
    run_folder_name,
    save_in_store,
)
from attnprof.torch_state import TorchState

if TYPE_CHECKING:
    import torch

    from attnprof.models.locate import Located

__all__ = ["Capture", "capture", "compiled_note", "is_compiled", "locate_for_capture",
           "process_rank", "shared_run_id"]


def capture(model: torch.nn.Module, out: str | os.PathLike[str] = "runs/",
            label: str | None = None, *, wait: int = 1, warmup: int = 1, active: int = 3,
            store: StoreChoice = None, attention_module: str | None = None,
            record_shapes: bool = True, profile_memory: bool = True) -> Capture:
    """A context manager that profiles the loop inside it (see the module doc).

    ``out``: the folder the run's folder (``<run id>-<label>``) is made in, holding the
    trace and the record. ``wait``/``warmup``/``active``: torch.profiler's schedule, in
    ``cap.step()`` calls. ``store``: the results store (``None``: ``$ATTNPROF_STORE``, else
    the user's; ``False``: none; or a path). ``attention_module``: a regular expression
    naming hand-written attention modules (path or class name), as ``--attention-module``.
    """
    return Capture(model, out=out, label=label, wait=wait, warmup=warmup, active=active,
                   store=store, attention_module=attention_module,
                   record_shapes=record_shapes, profile_memory=profile_memory)


def _count(name: str, value: object, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise UsageError(f"capture: {name}={value!r} must be a whole number of steps, "
                         f"at least {least}")
    return value


def locate_for_capture(model: Any, attention_module: str | None, what: str, *,
                       required: bool = True) -> Located:
    """The model's attention, layers and roles, without running it (names and code decide,
    :func:`~attnprof.models.locate.locate`); one clear error when none is found and
    ``required``."""
    import re

    import torch

    from attnprof.models.locate import locate

    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"{what} takes an nn.Module, got {type(model).__name__}")
    if attention_module is not None:
        try:
            re.compile(attention_module)
        except re.error as exc:
            raise UsageError(f"{what}: attention_module={attention_module!r} is not a "
                             f"regular expression ({exc})") from None
    located = locate(model, attention_module)
    if not located.attention and required:
        hint = (f"attention_module={attention_module!r} matched no module; "
                if attention_module else "")
        raise UsageError(f"{what}: no attention module found in {type(model).__name__}: "
                         f"{hint}name yours with attention_module=REGEX (a module path or "
                         "class name)")
    return located


def is_compiled(model: Any) -> bool:
    """Whether ``model`` or a module in it is torch.compile'd (``torch.compile(m)`` or
    ``m.compile()``)."""
    modules = model.modules() if hasattr(model, "modules") else ()
    return any(type(m).__name__ == "OptimizedModule"
               or getattr(m, "_compiled_call_impl", None) is not None for m in modules)


def compiled_note(model: Any) -> str | None:
    """What a torch.compile'd model is captured without (``None`` when not compiled)."""
    if not is_compiled(model):
        return None
    return ("the model is torch.compile'd, so it was captured without attnprof's labels: "
            "each label would break the compiled graph at its module (and compile it again "
            "for every module), so what ran would not be the user's compiled model. The "
            "trace's operators and attention ops stand; for attention per layer and "
            "component, capture the model before torch.compile")


class Capture:
    """The running capture: ``step()`` after every step; ``record`` once it is over."""

    def __init__(self, model: torch.nn.Module, *, out: str | os.PathLike[str],
                 label: str | None, wait: int, warmup: int, active: int,
                 store: StoreChoice, attention_module: str | None,
                 record_shapes: bool = True, profile_memory: bool = True) -> None:
        self.wait = _count("wait", wait, 0)
        self.warmup = _count("warmup", warmup, 0)
        self.active = _count("active", active, 1)
        if label is not None and (not isinstance(label, str) or not label.strip()
                                  or any(ord(c) < 32 for c in label)):
            raise UsageError(f"capture: label={label!r} must be non-empty text on one line")
        self.model, self.label, self.out = model, label, Path(out)
        self._store_choice, self._attention_module = store, attention_module
        self._options: dict[str, Any] = {"record_shapes": record_shapes,
                                         "profile_memory": profile_memory}
        #: The record, once the capture is over (``None`` when no step was recorded).
        self.record: AnalyzeRecord | None = None
        #: The run's folder, trace and record files; the stored run's id.
        self.folder: Path | None = None
        self.trace_path: Path | None = None
        self.record_path: Path | None = None
        self.stored_as: str | None = None
        #: What the capture has to say (a partial capture's reason, a compiled model).
        self.notes: list[str] = []
        self.steps = 0  # ``step()`` calls so far
        self._stack = contextlib.ExitStack()
        self._prof: Any = None
        self._written = False
        self._waits: list[float | None] = []
        self._t0: tuple[float, float | None] | None = None
        self._info: dict[str, Any] = {}
        self._info_final: dict[str, Any] | None = None
        self._store_path: Path | None = None
        self._run_id = ""
        self._rank: int | None = None
        self._oversubscribed: tuple[int, int] | None = None
        self._cuda = False

    # ----- entering -------------------------------------------------------------------
    def __enter__(self) -> Capture:
        from torch.profiler import ProfilerActivity, profile, schedule

        from attnprof.measure.contention import oversubscribed
        from attnprof.measure.label_cost import label_cost_us
        from attnprof.models.instrument import labelled

        compiled = compiled_note(self.model)
        located = locate_for_capture(self.model, self._attention_module, "capture",
                                     required=compiled is None)
        from torch._C._autograd import _profiler_enabled

        if _profiler_enabled():  # torch runs one profiler at a time
            raise UsageError("capture: a torch.profiler is already recording; pass "
                             "attnprof.trace_handler(dir, model=model) as its on_trace_ready "
                             "instead of capturing inside it")
        store = check_store(self._store_choice)
        self._store_path = store
        rank = process_rank()
        run_id = shared_run_id()
        self.folder = self.out / run_folder_name(run_id, self.label)
        self.folder.mkdir(parents=True, exist_ok=True)
        stem = "trace" if rank is None else f"trace-rank{rank}"
        self.trace_path = self.folder / f"{stem}.pt.trace.json.gz"
        self._run_id, self._rank = run_id, rank
        cost = None
        if compiled is not None:
            self.notes.append(compiled)
        else:
            state = TorchState()
            try:
                cost = label_cost_us()
            finally:
                state.restore(quiet_rng=True)
        self._info = {
            "label": self.label, "wait": self.wait, "warmup": self.warmup,
            "active": self.active, "label_cost_us": cost,
            "attention_modules": [f.path for f in located.attention],
            "training": bool(self.model.training), "rank": rank,
        }
        activities = [ProfilerActivity.CPU]
        import torch

        self._cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        if self._cuda:
            activities.append(ProfilerActivity.CUDA)
        self._oversubscribed = oversubscribed()
        if compiled is None:
            self._stack.enter_context(labelled(located))
        try:
            self._prof = profile(
                activities=activities, schedule=schedule(
                    wait=self.wait, warmup=self.warmup, active=self.active, repeat=1),
                on_trace_ready=self._export, **self._options)
            self._prof.start()
        except BaseException:
            self._stack.close()
            raise
        self._begin_step()
        return self

    # ----- the loop ---------------------------------------------------------------------
    def step(self) -> None:
        """The loop finished a step (as ``torch.profiler.profile.step``)."""
        self.steps += 1
        if self._prof is None:  # the schedule is over: the loop runs as without attnprof
            return
        if self._cuda and self._recording():
            import torch

            torch.cuda.synchronize()  # a step's kernels finish inside the step
        self._end_step()
        last = self.wait + self.warmup + self.active
        if self.steps == last:
            self._add_metadata(partial=False)
        self._prof.step()
        if self.steps >= last:
            self._finish_profiler()
        else:
            self._begin_step()

    def _recording(self) -> bool:
        return self.wait + self.warmup <= self.steps < self.wait + self.warmup + self.active

    def _begin_step(self) -> None:
        from attnprof.measure.contention import cpu_wait_s

        self._t0 = (time.perf_counter(), cpu_wait_s()) if self._recording() else None

    def _end_step(self) -> None:
        from attnprof.measure.contention import cpu_wait_s, wait_fraction

        if self._t0 is not None:
            t0, w0 = self._t0
            self._waits.append(wait_fraction(w0, cpu_wait_s(), time.perf_counter() - t0))
            self._t0 = None

    def _add_metadata(self, *, partial: bool, reason: str | None = None) -> None:
        """The ``attnprof`` block, while the profiler still records (only a live profiler
        carries metadata into the export)."""
        recorded = max(min(self.steps - self.wait - self.warmup, self.active), 0)
        capture = {**self._info, "steps_run": self.steps, "steps_recorded": recorded,
                   "status": "partial" if partial else "complete"}
        if reason:
            capture["reason"] = reason
        if self.notes:
            capture["notes"] = list(self.notes)
        block: dict[str, Any] = {"capture": capture, "cpu_wait": list(self._waits)}
        if self._oversubscribed is not None:
            block["oversubscribed"] = list(self._oversubscribed)
        self._prof.add_metadata_json("attnprof", json.dumps(block))
        self._info_final = capture

    def _export(self, prof: Any) -> None:
        from attnprof.atomic import atomic_path

        assert self.trace_path is not None
        with atomic_path(self.trace_path, suffix=".json.gz") as tmp:
            prof.export_chrome_trace(str(tmp))
        self._written = True

    def _finish_profiler(self) -> None:
        """Stop the profiler (writing the trace if it recorded) and take the labels off."""
        prof, self._prof = self._prof, None
        try:
            if prof is not None:
                prof.stop()
        finally:
            self._stack.close()

    # ----- leaving ----------------------------------------------------------------------
    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        try:
            self._finish(exc)
        except BaseException as ours:
            if exc is None:
                raise
            # The loop's own exception is what the user must see; ours is said beside it.
            warnings.warn(f"attnprof.capture could not finish after the loop raised: "
                          f"{type(ours).__name__}: {ours}", stacklevel=2)
        finally:  # whatever failed above, the profiler stops and the labels come off
            if self._prof is not None:
                prof, self._prof = self._prof, None
                with contextlib.suppress(Exception):
                    prof.stop()
            self._stack.close()
        return False  # never swallow the loop's exception

    def _finish(self, exc: BaseException | None) -> None:
        last = self.wait + self.warmup + self.active
        partial = self.steps < last or self._info_final is None
        if self._prof is not None:
            self._end_step()
            reason = _why_partial(self.steps, last, exc)
            self.notes.append(reason)
            if self._recording():
                self._add_metadata(partial=True, reason=reason)
            self._finish_profiler()
        if not self._written or self.trace_path is None:
            self.notes.append(f"no step was recorded: the schedule records from step "
                              f"{self.wait + self.warmup + 1} (wait={self.wait}, "
                              f"warmup={self.warmup}) and the loop called step() "
                              f"{self.steps} times; nothing was written or stored")
            return
        state = TorchState()
        try:
            info = dict(self._info_final or {})
            info["steps_run"] = self.steps
            self.record = analyse_capture(self.trace_path, info, partial=partial)
            self.record.run_id = self._run_id
        finally:
            state.restore(quiet_rng=True)
        assert self.folder is not None
        name = "record" if self._rank is None else f"record-rank{self._rank}"
        self.record_path = self.folder / f"{name}.json"
        self.record.save(self.record_path)
        if self._rank in (None, 0):
            self.stored_as = save_in_store(self._store_path, self.record, self.label,
                                           "python: attnprof.capture")


def _why_partial(steps: int, last: int, exc: BaseException | None) -> str:
    if exc is not None:
        return (f"the loop raised {type(exc).__name__} after {steps} of the schedule's "
                f"{last} steps; the step it was in is cut short")
    return f"the loop ended after {steps} of the schedule's {last} steps"


def process_rank() -> int | None:
    """This process's rank in an initialised process group (``None`` without one)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return int(dist.get_rank())
    return None


def shared_run_id() -> str:
    """A new run id; under DDP rank 0's, so every rank writes into one run folder."""
    import torch.distributed as dist

    run_id = new_run_id()
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        shared = [run_id]
        dist.broadcast_object_list(shared, src=0)
        run_id = str(shared[0])
    return run_id
