"""``AttnprofCallback``: :func:`attnprof.capture` around ``transformers.Trainer.train()``.

::

    from attnprof.integrations.transformers import AttnprofCallback

    callback = AttnprofCallback(out="runs/", label="baseline")
    Trainer(model=model, args=args, train_dataset=data, callbacks=[callback]).train()
    callback.record     # the same analyze record attnprof.capture returns

The capture starts when training begins (the Trainer's model is located and labelled), a
Trainer step — one optimizer step, every gradient-accumulation micro-batch in it — is one
profiler step, and the capture ends with training. Once the schedule's steps are recorded
the profiler and the labels come off, so the rest of training runs as without attnprof.
Needs the ``hf`` extra (transformers); importing this module imports transformers.
"""

from __future__ import annotations

import os
from typing import Any

from transformers import TrainerCallback

from attnprof.record.analyze import AnalyzeRecord
from attnprof.run.capture import Capture, capture
from attnprof.run.capture_record import StoreChoice

__all__ = ["AttnprofCallback"]


class AttnprofCallback(TrainerCallback):
    """Capture the Trainer's steps; ``record`` once training has ended (see the module
    doc). The arguments are :func:`attnprof.capture`'s."""

    def __init__(self, out: str | os.PathLike[str] = "runs/", label: str | None = None, *,
                 wait: int = 1, warmup: int = 1, active: int = 3, store: StoreChoice = None,
                 attention_module: str | None = None) -> None:
        self._options: dict[str, Any] = {
            "out": out, "label": label, "wait": wait, "warmup": warmup, "active": active,
            "store": store, "attention_module": attention_module}
        #: The running capture (its ``notes``, ``folder``, ``trace_path``, ``stored_as``).
        self.capture: Capture | None = None
        self.record: AnalyzeRecord | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                       **kwargs: Any) -> None:
        """Locate and label the Trainer's model and start the profiler."""
        self.capture = capture(model, **self._options)
        self.capture.__enter__()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """One optimizer step done: the profiler's step."""
        if self.capture is not None:
            self.capture.step()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Write, analyse and store what was recorded (partial when training stopped
        before the schedule's last step)."""
        if self.capture is not None:
            self.capture.__exit__(None, None, None)
            self.record = self.capture.record
