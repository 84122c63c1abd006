"""``attnprof.capture`` when the loop ends early or raises, when nothing was recorded, with
a user mistake; ``attnprof.trace_handler`` with the user's own profiler."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from known_loop import KnownCostModel

import attnprof
from attnprof.errors import UsageError
from attnprof.record.family import load_record
from attnprof.render import RENDERERS
from attnprof.render.terminal import TerminalRenderer


def _train(model: torch.nn.Module, steps: int, on_step: object, raise_at: int | None = None
           ) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(4, 16)
    for i in range(steps):
        if i == raise_at:
            model(x)  # a forward inside the step, then the loop's own failure
            raise KeyError("the loop's own error")
        model(x).square().mean().backward()
        opt.step()
        opt.zero_grad()
        on_step()  # type: ignore[operator]


def _labels_off(model: torch.nn.Module) -> bool:
    return all("forward" not in m.__dict__ for m in model.modules()) and \
        getattr(F.scaled_dot_product_attention, "__attnprof_label__", None) is None


def test_a_loop_that_ends_early_leaves_a_partial_record(tmp_path: Path) -> None:
    model = KnownCostModel()
    with attnprof.capture(model, out=tmp_path, store=False, attention_module="SlowAttention",
                          active=4) as cap:
        _train(model, 4, cap.step)  # wait 1 + warmup 1, then 2 of the 4 active steps
    record = cap.record
    assert record is not None and record.status == "partial"
    assert cap.record_path is not None and load_record(cap.record_path).status == "partial"
    block = record.reports[0].attnprof["capture"]  # type: ignore[index]
    assert block["steps_recorded"] == 2 and block["status"] == "partial"
    assert "the loop ended after 4 of the schedule's 6 steps" in block["reason"]
    # The step the stopped profiler left open ran none of the model: not a step.
    assert record.reports[0].model is not None and record.reports[0].model.steps == 2
    assert _labels_off(model)
    # Every renderer takes the record; the terminal view says what the capture was.
    for name, renderer in RENDERERS.items():  # (images: as for any analyze record)
        if name in ("png", "svg"):
            continue
        out = renderer().render(record)
        assert out and isinstance(out, bytes) == renderer.output_is_binary, name
    shown = TerminalRenderer(width=200).render(record)
    assert "captured by attnprof: 2 of 4 scheduled steps recorded" in shown
    assert "partial capture: the loop ended after 4 of the schedule's 6 steps" in shown
    assert "attnprof's labels cost" in shown


def test_the_loops_exception_comes_out_unchanged_and_nothing_is_lost(tmp_path: Path) -> None:
    model = KnownCostModel()
    model.eval()
    with pytest.raises(KeyError, match="the loop's own error") as caught, \
            attnprof.capture(model, out=tmp_path, store=False,
                             attention_module="SlowAttention") as cap:
        _train(model, 5, cap.step, raise_at=3)
    assert caught.type is KeyError
    assert not model.training  # left in eval, as found
    assert _labels_off(model)
    record = cap.record
    assert record is not None and record.status == "partial"
    reason = record.reports[0].attnprof["capture"]["reason"]  # type: ignore[index]
    assert "raised KeyError after 3 of the schedule's 5 steps" in reason
    assert cap.trace_path is not None and cap.trace_path.is_file()
    assert record.reports[0].model is not None and record.reports[0].model.steps == 2


def test_a_loop_that_records_nothing_says_so(tmp_path: Path) -> None:
    model = KnownCostModel()
    with attnprof.capture(model, out=tmp_path, store=False,
                          attention_module="SlowAttention") as cap:
        _train(model, 1, cap.step)
    assert cap.record is None and cap.record_path is None
    assert any("no step was recorded" in note for note in cap.notes)
    assert _labels_off(model)


def test_steps_after_the_schedule_run_without_labels_or_profiler(tmp_path: Path) -> None:
    model = KnownCostModel()
    seen: list[bool] = []

    def step() -> None:
        cap.step()
        seen.append("forward" in model.layers[0].attn.__dict__)

    with attnprof.capture(model, out=tmp_path, store=False, attention_module="SlowAttention",
                          wait=0, warmup=0, active=1) as cap:
        _train(model, 3, step)
    assert seen == [False, False, False]
    assert cap.record is not None and cap.record.status == "complete"


@pytest.mark.parametrize(("kwargs", "said"), [
    ({"active": 0}, "active=0 must be a whole number of steps, at least 1"),
    ({"wait": -1}, "wait=-1"),
    ({"label": ""}, "label=''"),
    ({"attention_module": "("}, "is not a regular expression"),
    ({"attention_module": "NoSuchThing"}, "matched no module"),
])
def test_a_mistake_is_one_usage_error_before_the_loop(tmp_path: Path, kwargs: dict,
                                                      said: str) -> None:
    model = KnownCostModel()
    options = {"attention_module": "SlowAttention", **kwargs}
    with pytest.raises(UsageError, match=said.replace("(", r"\(")), \
            attnprof.capture(model, out=tmp_path, store=False, **options):
        pytest.fail("the loop must not run")
    assert _labels_off(model)
    assert not any(tmp_path.iterdir())


def test_not_a_module_or_no_attention(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"takes an nn\.Module, got int"):
        attnprof.capture(3, out=tmp_path).__enter__()
    with pytest.raises(UsageError, match="no attention module found in Linear"):
        attnprof.capture(torch.nn.Linear(2, 2), out=tmp_path, store=False).__enter__()


def test_trace_handler_with_the_users_own_profiler(tmp_path: Path) -> None:
    from torch.profiler import profile, schedule

    model = KnownCostModel()
    with attnprof.trace_handler(tmp_path, model=model, label="own", store=False,
                                attention_module="SlowAttention") as handler, \
            profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                    on_trace_ready=handler) as prof:
        _train(model, 8, prof.step)
    assert _labels_off(model)
    assert len(handler.records) == 2
    for cycle, record in enumerate(handler.records):
        assert record.kind == "analyze" and record.status == "complete"
        assert record.reports[0].model is not None and record.reports[0].model.steps == 2
        block = record.reports[0].attnprof["capture"]  # type: ignore[index]
        assert block["cycle"] == cycle and block["labels_cost_us_per_step"] > 0
        assert (handler.folder / f"trace-{cycle}.pt.trace.json.gz").is_file()
        assert load_record(handler.folder / f"record-{cycle}.json").run_id == record.run_id


def test_import_attnprof_stays_light() -> None:
    import subprocess

    code = ("import sys, attnprof; attnprof.capture; attnprof.trace_handler; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "[]"


def test_inside_a_running_profiler_is_a_usage_error(tmp_path: Path) -> None:
    from torch.profiler import profile

    model = KnownCostModel()
    with profile(), pytest.raises(UsageError, match=r"already recording; pass attnprof\.trace"):
        attnprof.capture(model, out=tmp_path, attention_module="SlowAttention").__enter__()
    assert _labels_off(model)
