"""A row runs what it names: every sub-model switched, every attention module checked
before the run, every layer's core checked after it (issue 16, item 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from model_helpers import FAST, config_dir

from attnprof.models.implementations import stale_modules, switch_implementation
from attnprof.run.model import prepare_model, profile_model
from attnprof.workload.model_spec import ModelSpec

transformers = pytest.importorskip("transformers")


def test_t5_eager_runs_eager_in_every_layer_of_both_stacks(tmp_path: Path) -> None:
    spec = ModelSpec(model_path=str(config_dir(tmp_path, "t5")), seq=12,
                     implementations=("eager", "sdpa"), phases=("prefill", "decode"))
    prepared = prepare_model(spec)
    record = profile_model(prepared=prepared, settings=FAST)
    for run in record.runs:
        assert run.status == "ok", (run.implementation, run.phase, run.reason)
        att = run.attribution
        assert att is not None and att.layers
        ran = {layer.actual.split(" ")[0] for layer in att.layers}  # type: ignore[union-attr]
        assert ran == {run.implementation}, (run.implementation, run.phase, ran)
        assert all(layer.as_requested for layer in att.layers)
        assert not [f for f in att.findings if f.rule == "attention-fallback"]
    # eager and SDPA differ in rounding, so the comparison is a real one.
    sdpa = record.run("sdpa", "prefill")
    assert sdpa.reference == "eager" and sdpa.within_tolerance is True
    # The model is left as it was built: sdpa in both stacks.
    assert not stale_modules(prepared[2], "sdpa")


def test_transformers_own_switch_leaves_the_t5_stacks_and_the_check_names_them(
        tmp_path: Path) -> None:
    spec = ModelSpec(model_path=str(config_dir(tmp_path, "t5")), seq=8)
    _, loaded, located = prepare_model(spec)
    loaded.model.set_attn_implementation("eager")  # type: ignore[operator]
    left = stale_modules(located, "eager")
    assert {impl for _, impl in left} == {"sdpa"}
    assert {p.split(".")[0] for p, _ in left} == {"encoder", "decoder"}
    assert len(left) == 6  # 2 encoder self, 2 decoder self, 2 cross
    switch_implementation(loaded, "eager", located)
    assert stale_modules(located, "eager") == []


def test_a_pinned_backend_on_attention_that_calls_no_sdpa_is_unsupported(
        factories: Path) -> None:
    spec = ModelSpec(source=f"{factories}:make", attention_module="ScratchAttention",
                     implementations=("sdpa-math",), phases=("prefill",))
    (run,) = profile_model(spec=spec, settings=FAST).runs
    assert run.status == "unsupported"
    assert run.reason.startswith("sdpa-math was asked for but the trace shows eager "
                                 "(hand-written) ran in 2 layer(s) (0, 1)")
    assert run.latency_ms is None and run.attribution is not None  # the evidence stays


def test_a_backend_refusal_is_unsupported_in_model_as_in_compare() -> None:
    """One classification of refusals: sdpa-efficient on a CPU is refused by PyTorch ("No
    viable backend"), the same row status and reason in both commands (issue 16, item 6)."""
    from model_helpers import TINY

    from attnprof.run.compare import compare
    from attnprof.workload.settings import Settings, TimingPlan

    plan = TimingPlan(warmup_s=0.0, min_time_s=0.0, min_samples=2, max_samples=2,
                      min_warmup_calls=1, rounds=1)
    compared = compare(variants=["sdpa-efficient", "sdpa-cudnn"], batch=1, heads=2,
                       kv_heads=2, seq=16, head_dim=8, device="cpu",
                       settings=Settings(plan=plan, measure_ceilings=False))
    modelled = profile_model(spec=ModelSpec(source="llama", **TINY,
                                            implementations=("sdpa-efficient", "sdpa-cudnn")),
                             settings=FAST)
    for name in ("sdpa-efficient", "sdpa-cudnn"):
        row, run = compared.result(name), modelled.run(name, "prefill")
        assert row.status == run.status == "unsupported", (name, run.reason)
        assert run.reason == row.reason
        assert run.reason.startswith("PyTorch refused without a reason on cpu: ")
