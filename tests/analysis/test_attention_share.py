"""How much of a forward is attention, on real CPU captures of variants and of a model."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from attnprof.analysis.analyze import analyze_trace
from attnprof.record.trace_report import TraceReport
from attnprof.trace import load_trace

FUSED_CPU = "aten::_scaled_dot_product_flash_attention_for_cpu"


def test_attention_variants_are_all_attention_and_hand_written_is_inferred(
        cpu_reports: dict[str, TraceReport]) -> None:
    share = {name: r.regions[0].attention_share for name, r in cpu_reports.items()}
    assert share["sdpa-flash"] == 1.0 and share["sdpa-math"] == 1.0
    # flex-eager: Dynamo's guard check (TorchDynamo Cache Lookup) runs before the compiled
    # region, in the step but not in attention: a few per cent of a tiny step, more when
    # the machine is busy (the lookup is Python, the step a few fused calls).
    assert share["flex-eager"] is not None and 0.8 < share["flex-eager"] < 1.0
    # Hand-written attention has no op that names it: found by its pattern, marked so,
    # with the ops it counted (its time against the raw events: the next test).
    for name in ("naive", "naive-inplace"):
        att = cpu_reports[name].regions[0].attention
        assert att is not None and att.found_by == ["pattern"]
        assert att.inferred_us == att.per_step_us == att.forward_us > 0
        assert att.forward_ops["aten::matmul"] == 2 and att.forward_ops["aten::softmax"] == 1
        assert share[name] is not None and 0 < share[name] < 1
    assert cpu_reports["sdpa-flash"].regions[0].attention.found_by == ["name"]
    # repeat_interleave's copies run before SDPA, outside it: in the step, not attention.
    region = cpu_reports["gqa-repeat-kv"].regions[0]
    att = region.attention
    assert att is not None and att.forward_ops == {"aten::scaled_dot_product_attention": 1}
    repeat = sum(o.total_us for o in region.ops if o.name == "aten::repeat_interleave")
    assert repeat > 0 and region.attention_share is not None
    whole = att.per_step_us / region.attention_share * region.instances
    assert whole >= att.per_step_us * region.instances + repeat * (1 - 1e-9)


@pytest.mark.parametrize("variant", ["naive", "naive-inplace"])
def test_hand_written_attention_is_its_five_steps(variant: str, cpu_record: Any) -> None:
    # From the raw events: scores matmul, scale, mask, softmax, matmul with v — the ops
    # naive attention is written as — inside each step, outermost among themselves; the
    # KV heads' repeat and k's transpose before them are not attention's core.
    path = Path(cpu_record.result(variant).trace)
    report = analyze_trace(load_trace(path))
    (region,) = report.regions
    with gzip.open(path, "rt") if path.suffix == ".gz" else path.open() as f:
        events = json.load(f)["traceEvents"]
    steps = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
             and e["name"] == f"attnprof::{variant}"]
    core = {"aten::matmul", "aten::mul", "aten::masked_fill", "aten::masked_fill_",
            "aten::softmax"}
    ops = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"
                  and e["name"] in core), key=lambda e: (e["ts"], -e["dur"]))
    outer: list[dict[str, Any]] = []
    for e in ops:
        if not (outer and e["ts"] + e["dur"] <= outer[-1]["ts"] + outer[-1]["dur"]):
            outer.append(e)
    per_step = [sum(e["dur"] for e in outer if s["ts"] <= e["ts"] <= s["ts"] + s["dur"])
                for s in steps]
    assert region.attention is not None and len(per_step) == region.instances == 2
    assert region.attention.steps_us == pytest.approx(per_step, rel=1e-9)


@pytest.fixture(scope="module")
def encoder_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A foreign trace of a small transformer encoder layer: attention among other work."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=256,
                                             dropout=0.0, batch_first=True)
    layer.train()  # the eval fast path fuses the whole layer into one op
    x = torch.randn(2, 128, 64)
    path = tmp_path_factory.mktemp("encoder") / "encoder.json"
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU],
                                  schedule=schedule(wait=1, warmup=1, active=2)) as prof:
        for _ in range(4):
            layer(x)
            prof.step()
    prof.export_chrome_trace(str(path))
    return path


def test_a_models_attention_share_matches_its_fused_ops(encoder_trace: Path) -> None:
    report = analyze_trace(load_trace(encoder_trace))
    (region,) = report.regions
    assert region.instances == 2
    share = region.attention_share
    assert share is not None and 0.0 < share < 1.0
    # Independently, from the raw events: one SDPA call per forward (the fused op inside
    # it), and that call is all the attention there was (no grad: no backward).
    events = json.loads(encoder_trace.read_text())["traceEvents"]
    steps = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
             and e["name"].startswith("ProfilerStep#")]

    def in_steps(name: str) -> list[dict[str, Any]]:
        return [e for e in events if e.get("ph") == "X" and e["name"] == name
                and any(s["ts"] <= e["ts"] <= s["ts"] + s["dur"] for s in steps)]

    assert len(in_steps(FUSED_CPU)) == 2
    calls = in_steps("aten::scaled_dot_product_attention")
    assert len(calls) == 2
    assert region.attention_us_per_forward == pytest.approx(sum(e["dur"] for e in calls) / 2)
    assert region.attention is not None and region.attention.backward_us == 0.0


def test_gpu_traces_without_attention_say_zero(load_public: Any) -> None:
    _, report = load_public("a100_alexnet_inference.json.gz")
    assert report.regions[0].attention_share == 0.0
    assert report.regions[0].attention_us_per_forward == 0.0
