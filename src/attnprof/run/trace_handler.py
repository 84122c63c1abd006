"""``attnprof.trace_handler``: for a loop that keeps its own ``torch.profiler.profile``.

::

    with attnprof.trace_handler("runs/", model=model) as handler, torch.profiler.profile(
            schedule=torch.profiler.schedule(wait=1, warmup=1, active=3),
            on_trace_ready=handler) as prof:
        for batch in loader:
            ...
            prof.step()
    handler.records     # one analyze record per profiling cycle

Under DDP the ranks' handlers share rank 0's run folder (made on every rank alike), each
rank's files named with its rank. Given a model, its attention modules are labelled from
the handler's creation until it is
closed (``close()``, or the end of its ``with`` block), as :func:`attnprof.capture`
labels them. Each time the profiler finishes a cycle the handler writes the trace (gzip'd
Chrome trace) into its run folder, analyses it into a record
(:func:`~attnprof.run.capture_record.analyse_capture`), writes the record beside it and
stores it. The profiler is the user's, so the handler cannot add to the trace's metadata:
what it knows (the labels' cost, the cycle) is in the record only.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from attnprof.errors import UsageError
from attnprof.record.analyze import AnalyzeRecord
from attnprof.run.capture import (
    compiled_note,
    locate_for_capture,
    process_rank,
    shared_run_id,
)
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

__all__ = ["TraceHandler", "trace_handler"]


def trace_handler(dir: str | os.PathLike[str] = "runs/",
                  model: torch.nn.Module | None = None, *, label: str | None = None,
                  store: StoreChoice = None,
                  attention_module: str | None = None) -> TraceHandler:
    """An ``on_trace_ready`` handler writing each trace and its record (see the module
    doc). ``model``: the model to label (without one the trace is analysed as any foreign
    trace). ``store``, ``attention_module``: as :func:`attnprof.capture`."""
    return TraceHandler(dir, model=model, label=label, store=store,
                        attention_module=attention_module)


class TraceHandler:
    """Call it with the profiler at the end of each cycle; ``records`` holds the results."""

    def __init__(self, dir: str | os.PathLike[str], *,
                 model: torch.nn.Module | None, label: str | None, store: StoreChoice,
                 attention_module: str | None) -> None:
        if label is not None and (not isinstance(label, str) or not label.strip()):
            raise UsageError(f"trace_handler: label={label!r} must be non-empty text")
        self.label = label
        self.records: list[AnalyzeRecord] = []
        self.notes: list[str] = []
        self._store = check_store(store)
        self._rank = process_rank()
        # Under DDP every rank's handler is made alike: rank 0's id, one run folder.
        self.folder = Path(dir) / run_folder_name(shared_run_id(), label)
        self._stack = contextlib.ExitStack()
        self._info: dict[str, Any] = {"label": label, "rank": self._rank}
        if model is not None:
            from attnprof.measure.label_cost import label_cost_us
            from attnprof.models.instrument import labelled

            compiled = compiled_note(model)
            located = locate_for_capture(model, attention_module, "trace_handler",
                                         required=compiled is None)
            self._info["attention_modules"] = [f.path for f in located.attention]
            self._info["training"] = bool(model.training)
            if compiled is not None:  # labels would break its graphs: see compiled_note
                self.notes.append(compiled)
                self._info["notes"] = [compiled]
            else:
                state = TorchState()
                try:
                    self._info["label_cost_us"] = label_cost_us()
                finally:
                    state.restore(quiet_rng=True)
                self._stack.enter_context(labelled(located))
        self.folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, prof: Any) -> None:
        from attnprof.atomic import atomic_path

        cycle = len(self.records)
        rank = "" if self._rank is None else f"-rank{self._rank}"
        path = self.folder / f"trace-{cycle}{rank}.pt.trace.json.gz"
        with atomic_path(path, suffix=".json.gz") as tmp:
            prof.export_chrome_trace(str(tmp))
        state = TorchState()
        try:
            record = analyse_capture(path, {**self._info, "cycle": cycle,
                                            "steps_run": int(prof.step_num)}, partial=False)
        finally:
            state.restore(quiet_rng=True)
        record.save(self.folder / f"record-{cycle}{rank}.json")
        if self._rank in (None, 0):
            save_in_store(self._store, record, self.label, "python: attnprof.trace_handler")
        self.records.append(record)

    @property
    def record(self) -> AnalyzeRecord | None:
        """The last cycle's record (``None`` before the first)."""
        return self.records[-1] if self.records else None

    def close(self) -> None:
        """Take the labels off the model (safe to call twice)."""
        self._stack.close()

    def __enter__(self) -> TraceHandler:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
