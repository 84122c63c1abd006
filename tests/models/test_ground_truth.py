"""The attribution against ground truth: models whose costs are known (busy work of a set
duration, matmuls of known FLOPs), in several layouts, traced and attributed the way a run
does it.

Two truths: the step's own measurement of itself (each module timed its forward with
``perf_counter``: no profiler, no label), which each traced step's share must match within
2 points; and the designed cost (6 ms of attention, 14 ms of MLP per layer). Both are
robust to a loaded machine the same way: a step whose threads waited for a CPU a fraction
``w`` of its time (other processes running; the capture records it per step) may have been
parked for that long at any point, a label's edge included, so the line is ``2 points + w``
— on a quiet machine, 2 points.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from known_cost import ATTENTION_S, CALLS, MLP_S, attention_beyond_busy_s, build, measured_shares
from model_helpers import FAST

from attnprof.analysis.analyze import analyze_trace
from attnprof.measure.capture import capture_trace
from attnprof.models.instrument import labelled
from attnprof.models.locate import locate
from attnprof.record.model import ModelSettings
from attnprof.record.model_attribution import ModelAttribution
from attnprof.run.model import profile_model
from attnprof.trace import load_trace
from attnprof.workload.settings import CaptureSpec

STEPS = 3
LAYOUTS = ["attention first", "attention last", "nested", "per-head loop", "tensor"]


def traced(model: torch.nn.Module, x: torch.Tensor, pattern: str | None,
           path: Path) -> ModelAttribution:
    """Locate, label, trace :data:`STEPS` steps and attribute them, as a run does."""
    return traced_with_waits(model, x, pattern, path)[0]


def traced_with_waits(model: torch.nn.Module, x: torch.Tensor, pattern: str | None,
                      path: Path) -> tuple[ModelAttribution, list[float]]:
    """:func:`traced`, and the fraction of each traced step its threads waited for a CPU
    (0 where the platform does not count it)."""
    located = locate(model, pattern, probe=lambda: model(x))
    with torch.no_grad():
        model(x)  # warm
        CALLS.clear()
        with labelled(located):
            capture_trace(lambda: model(x), "model/as-built/prefill", "cpu", path,
                          CaptureSpec(steps=STEPS, wait=0, warmup=1),
                          metadata={"implementation": "as-built", "phase": "prefill"},
                          untraced_faults=True)
    trace = load_trace(path)
    att = analyze_trace(trace).model
    assert att is not None
    waits = [w or 0.0 for w in (trace.meta.attnprof or {}).get("cpu_wait", [None] * STEPS)]
    return att, waits


def check_adds_up(att: ModelAttribution) -> None:
    """Parts add up to their whole in the reported step; every share in [0, 1]."""
    parts = {p.name: p for p in att.parts}
    assert math.fsum(p.cpu_us for p in att.parts) == pytest.approx(att.total_cpu_us, rel=1e-9)
    assert math.fsum(lay.cpu_us for lay in att.layers) == pytest.approx(
        parts["layers"].cpu_us, rel=1e-9)
    for layer in att.layers:
        assert math.fsum(c.cpu_us for c in layer.components) == pytest.approx(layer.cpu_us,
                                                                              rel=1e-9)
        assert layer.attention_share is not None and 0 <= layer.attention_share <= 1
    assert att.attention_share is not None and 0 <= att.attention_share <= 1
    assert all(0 <= s <= 1 for s in att.step_attention_shares)
    assert att.step_attention_shares[att.step] == att.attention_share
    assert sorted(att.step_attention_shares)[(len(att.step_attention_shares) - 1) // 2] == \
        att.attention_share
    attention = math.fsum(c.cpu_us for lay in att.layers for c in lay.components
                          if c.group == "attention")
    assert attention / att.total_cpu_us == pytest.approx(att.attention_share, rel=1e-9)


def check_designed(att: ModelAttribution, designed_s: float, extra_s: float,
                   wait: float) -> None:
    """The designed busy work is attention's for certain: the share is at least its part
    of the step, and above it by no more than the step's attention spent beyond it
    (tensor work, measured by the model itself), within 2 points plus the step's wait."""
    total_s = att.total_cpu_us / 1e6
    assert att.attention_share is not None
    low = designed_s / total_s
    assert low - 0.02 - wait <= att.attention_share <= low + extra_s / total_s + 0.02 + wait, (
        att.attention_share, low, extra_s / total_s, wait)


def unattributed(att: ModelAttribution) -> float:
    """The step's time no label claims: the model's own and each layer's own."""
    rest = sum(p.cpu_us for p in att.parts if p.name == "unattributed")
    rest += sum(c.cpu_us for lay in att.layers for c in lay.components
                if c.name == "unattributed")
    return rest / att.total_cpu_us


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_traced_step_reads_as_it_measured_itself(layout: str, tmp_path: Path) -> None:
    model, x, designed, pattern = build(layout)
    att, waits = traced_with_waits(model, x, pattern, tmp_path / "t.pt.trace.json.gz")
    assert att.time_basis == "cpu" and att.steps == STEPS
    truth = measured_shares(STEPS)
    for got, want, waited in zip(att.step_attention_shares, truth, waits, strict=True):
        assert got == pytest.approx(want, abs=0.02 + waited), (
            att.step_attention_shares, truth, waits)
    check_adds_up(att)
    wait = waits[att.step]
    if designed is not None:  # busy work: its truth does not depend on the load
        extra = attention_beyond_busy_s(designed)[-STEPS:][att.step]
        check_designed(att, designed, extra, wait)
        assert unattributed(att) <= 0.05 + wait
    names = {c.name for lay in att.layers for c in lay.components}
    assert {"q_proj", "k_proj", "v_proj", "o_proj", "mlp"} <= names, names


def test_a_per_head_loop_is_its_layers_attention(tmp_path: Path) -> None:
    model, x, _, pattern = build("per-head loop")
    att = traced(model, x, pattern, tmp_path / "t.pt.trace.json.gz")
    for layer in att.layers:
        assert layer.core_source == "inferred"  # no attention function: the module's own time
        comps = {c.name: c.cpu_us for c in layer.components}
        # The loop's busy work (a quarter of ATTENTION_S per head) is the core's, inside the
        # layer's attention; not the layer's unattributed rest, not lost.
        assert comps["core"] >= 0.95 * ATTENTION_S * 1e6
        assert layer.attention_cpu_us >= comps["core"]
        assert comps.get("unattributed", 0.0) < 0.05 * ATTENTION_S * 1e6 + (
            att.cpu_wait or 0.0) * layer.cpu_us


def test_the_known_cost_model_through_a_run() -> None:
    """Issue 22's model: 4 layers, attention 6 ms and MLP 14 ms of Python per layer; the
    true attention share is 6 / 20 of the layers' time."""
    model, x, designed, _ = build("attention first", layers=4)
    CALLS.clear()
    settings = ModelSettings(plan=FAST.plan, trace_steps=STEPS)
    record = profile_model(model, (x,), settings=settings)
    run = record.runs[0]
    att = run.attribution
    assert att is not None and run.attention_share == att.attention_share
    check_adds_up(att)
    wait = att.cpu_wait or 0.0
    assert designed is not None
    # The run's traced steps are among its timed ones; the largest extra of any bounds it.
    check_designed(att, designed, max(attention_beyond_busy_s(designed)), wait)
    assert unattributed(att) <= 0.05 + wait
    assert unattributed(att) > 0  # the step less its labels: measured, never 0 by design
    layers = next(p for p in att.parts if p.name == "layers")
    assert layers.cpu_us >= 4 * (ATTENTION_S + MLP_S) * 1e6
    assert run.shares_unreliable == att.unreliable


def test_shares_never_pass_the_whole_when_layers_vary_from_step_to_step(
        tmp_path: Path) -> None:
    """Issue 16 item 2: layer 0's attention is heavy in two steps of three, layer 1's in
    the other two; a sum of per-component medians then counts each layer's heavy steps
    (2 × heavy) against a median step of one heavy layer: a share of 200%."""
    model, x, _, _ = build("alternating")
    att = traced(model, x, None, tmp_path / "t.pt.trace.json.gz")
    check_adds_up(att)
    layers = next(p for p in att.parts if p.name == "layers")
    assert att.attention_cpu_us <= layers.cpu_us
    assert att.total_work_us is not None and att.attention_work_us is not None
    assert att.attention_work_us <= att.total_work_us
