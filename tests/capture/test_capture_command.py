"""``attnprof.commands.capture.run``: the capture as a request and a loop (issue 32), the
same capture as ``attnprof.capture``'s context manager."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from known_loop import KnownCostModel

import attnprof
from attnprof.commands.capture import CaptureRequest, run
from attnprof.errors import UsageError
from attnprof.record.family import load_record


def _loop(model: torch.nn.Module, steps: int) -> Callable[[Callable[[], None]], None]:
    def loop(step: Callable[[], None]) -> None:
        x = torch.randn(4, 16)
        for _ in range(steps):
            model(x).square().mean().backward()
            step()

    return loop


def test_run_profiles_the_loop_and_returns_its_record(tmp_path: Path) -> None:
    model = KnownCostModel()
    store = tmp_path / "runs.db"
    record = run(CaptureRequest(model=model, loop=_loop(model, 5), out=tmp_path / "out",
                                label="api", store=store,
                                attention_module="SlowAttention"))
    assert record.kind == "analyze" and record.status == "complete"
    capture = record.reports[0].attnprof["capture"]  # type: ignore[index]
    assert capture["steps_recorded"] == 3 and capture["label"] == "api"
    # Written beside its trace, and stored under its run id.
    (folder,) = (tmp_path / "out").iterdir()
    assert folder.name == f"{record.run_id}-api"
    assert load_record(folder / "record.json").run_id == record.run_id
    assert attnprof.load(record.run_id, store=store).run_id == record.run_id
    # The attention the model spends is found (the known loop's attention is timed).
    assert record.reports[0].model is not None and record.reports[0].model.steps == 3


def test_the_context_manager_takes_the_same_request_fields(tmp_path: Path) -> None:
    model = KnownCostModel()
    with attnprof.capture(model, out=tmp_path, store=False, attention_module="SlowAttention",
                          wait=0, warmup=1, active=2) as cap:
        _loop(model, 3)(cap.step)
    assert cap.record is not None and cap.record.status == "complete"


@pytest.mark.parametrize(("fields", "message"), [
    ({}, "run() needs loop="),
    ({"loop": lambda step: None}, "no step was recorded"),
    ({"loop": lambda step: step(), "active": 0}, "active=0 must be a whole number"),
])
def test_mistakes_are_one_usage_error(tmp_path: Path, fields: dict[str, object],
                                      message: str) -> None:
    request = CaptureRequest(model=KnownCostModel(), out=tmp_path, store=False,
                             attention_module="SlowAttention", **fields)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=re.escape(message)):
        run(request)
    assert not any(tmp_path.rglob("*.json"))  # no record written
