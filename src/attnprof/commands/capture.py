"""Capture: profile the user's own training (or inference) loop, in place.

The loop is the user's, so the command is a request and a loop: :func:`run` profiles
``request.loop`` (a function of one argument, ``step``, that it calls after every step)
and returns the analysis as an ``analyze`` record, written beside its trace in
``out/<run id>-<label>/`` and stored. The same capture around a loop written inline is the
context manager :func:`start` (``attnprof.capture(model, ...)``)::

    def loop(step):
        for batch in loader:
            loss = model(**batch).loss; loss.backward(); opt.step(); opt.zero_grad()
            step()

    record = run(CaptureRequest(model=model, loop=loop, label="baseline"))

What a capture does (labels, schedule, the trace, partial captures, DDP, a compiled model)
is :mod:`attnprof.run.capture`'s to say; this module only holds the request.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnprof.record.analyze import AnalyzeRecord
    from attnprof.run.capture import Capture
    from attnprof.run.capture_record import StoreChoice

__all__ = ["CaptureRequest", "run", "start"]

#: The user's loop: it calls ``step()`` after every step (``torch.profiler``'s
#: ``profile.step``).
Loop = Callable[[Callable[[], None]], object]


@dataclass(frozen=True, slots=True)
class CaptureRequest:
    """What to capture, and how."""

    #: The model the loop runs (an ``nn.Module``; its attention modules are labelled).
    model: Any
    #: The loop, for :func:`run`: called once with ``step``, which it calls after every
    #: step. :func:`start`, a context manager around an inline loop, needs none.
    loop: Loop | None = None
    #: The folder the run's folder (``<run id>-<label>``) is made in: the trace, the record.
    out: str | os.PathLike[str] = "runs/"
    #: A label to find the run by later (``attnprof show LABEL``).
    label: str | None = None
    #: torch.profiler's schedule, in ``step()`` calls: skipped, warm-up, then recorded.
    wait: int = 1
    warmup: int = 1
    active: int = 3
    #: The results store: ``None`` ($ATTNPROF_STORE, else the user's), ``False`` (none),
    #: or a path.
    store: StoreChoice = None
    #: A regular expression naming hand-written attention modules (path or class name).
    attention_module: str | None = None
    #: torch.profiler's ``record_shapes`` and ``profile_memory``.
    record_shapes: bool = True
    profile_memory: bool = True


def start(request: CaptureRequest) -> Capture:
    """The capture of ``request`` as a context manager around an inline loop, which calls
    its ``step()`` after every step; its ``record`` holds the analysis once it is over
    (``attnprof.capture``). A bad schedule or label is a
    :class:`~attnprof.errors.UsageError` here, before the loop runs."""
    from attnprof.run.capture import capture

    return capture(request.model, request.out, request.label, wait=request.wait,
                   warmup=request.warmup, active=request.active, store=request.store,
                   attention_module=request.attention_module,
                   record_shapes=request.record_shapes,
                   profile_memory=request.profile_memory)


def run(request: CaptureRequest, progress: object | None = None) -> AnalyzeRecord:
    """Run ``request.loop`` under a capture and return its record: attention per layer and
    component, the findings, and ``partial`` with the reason when the loop ended before
    the schedule's last step. The loop's own exception comes out unchanged (the record is
    still written and stored). A request without a loop, a bad schedule or label, or a
    loop that never reached a recorded step is a :class:`~attnprof.errors.UsageError`.
    ``progress``: this command has none to tell (kept for the one signature)."""
    from attnprof.errors import UsageError

    if request.loop is None:
        raise UsageError("capture: run() needs loop=, a function that runs the loop and "
                         "calls its argument step() after every step (or use "
                         "attnprof.capture(model) as a context manager)")
    with start(request) as cap:
        request.loop(cap.step)
    if cap.record is None:
        raise UsageError(f"capture: {cap.notes[-1]}; call step() after every step, or "
                         "lower wait= and warmup=")
    return cap.record
