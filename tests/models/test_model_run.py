"""attnprof.profile_model on the built-ins: every built-in and every phase, what the
record says about each, and how its parts add up."""

from __future__ import annotations

import math

import pytest
from model_helpers import FAST, TINY

from attnprof.analysis.attribution.implementation import implementation_findings
from attnprof.errors import UsageError
from attnprof.measure.accuracy import TOLERANCE
from attnprof.record.family import decode_record
from attnprof.record.model import ModelRecord, PhaseRun
from attnprof.run.model import profile_model
from attnprof.workload.model_spec import ModelSpec


def _profile(name: str, impls: tuple[str, ...], phases: tuple[str, ...],
             **sizes: int) -> ModelRecord:
    spec = ModelSpec(source=name, **{**TINY, **sizes}, implementations=impls, phases=phases)
    return profile_model(spec=spec, settings=FAST)


@pytest.fixture(scope="module")
def llama() -> ModelRecord:
    return _profile("llama", ("eager", "sdpa", "sdpa-math"), ("prefill", "decode", "train"),
                    kv_heads=2)


@pytest.fixture(scope="module")
def gpt2() -> ModelRecord:
    return _profile("gpt2", ("sdpa", "flex_attention"), ("prefill", "decode", "train"))


@pytest.fixture(scope="module")
def encoders() -> list[ModelRecord]:
    return [_profile("bert", ("eager", "sdpa"), ("prefill", "decode", "train")),
            _profile("vit", ("sdpa",), ("prefill", "train"))]


def _ok(record: ModelRecord) -> list[PhaseRun]:
    return [r for r in record.runs if r.status == "ok"]


def test_every_builtin_and_phase_runs(llama: ModelRecord, gpt2: ModelRecord,
                                      encoders: list[ModelRecord]) -> None:
    ran = {(rec.model.architecture, r.phase) for rec in (llama, gpt2, *encoders)
           for r in _ok(rec)}
    assert {("LlamaForCausalLM", p) for p in ("prefill", "decode", "train")} <= ran
    assert {("GPT2LMHeadModel", p) for p in ("prefill", "decode", "train")} <= ran
    assert {("BertModel", "prefill"), ("BertModel", "train"), ("ViTModel", "prefill"),
            ("ViTModel", "train")} <= ran
    for rec in (llama, gpt2, *encoders):
        assert rec.status == "complete"
        assert decode_record(rec.to_json()) == rec


def test_components_sum_to_each_layer_and_layers_to_the_step(llama: ModelRecord) -> None:
    for run in _ok(llama):
        att = run.attribution
        assert att is not None and len(att.layers) == 2, run.phase
        assert att.time_basis == "cpu"  # a CPU trace: shares of the wall time
        for layer in att.layers:
            for basis in ("cpu", "work"):
                total = math.fsum(c.on(basis) for c in layer.components)
                assert total == pytest.approx(layer.total_on(basis), rel=1e-6)
                assert 0 < layer.attention_on(basis) < layer.total_on(basis)
            names = {c.name for c in layer.components}
            assert {"q_proj", "k_proj", "v_proj", "o_proj", "core", "position", "mlp",
                    "norm"} <= names
        assert math.fsum(p.cpu_us for p in att.parts) == pytest.approx(att.total_cpu_us,
                                                                       rel=1e-6)
        assert math.fsum(p.on("work") for p in att.parts) == pytest.approx(
            att.total_work_us, rel=1e-6)
        assert 0 < att.attention_share < 1 and 0 < att.core_share < att.attention_share
        assert run.attention_share == att.attention_share


def test_what_ran_in_each_layer_and_how_many_ops_the_core_took(llama: ModelRecord) -> None:
    prefill = {r.implementation: r for r in llama.runs if r.phase == "prefill"}
    actual = {impl: {layer.actual for layer in r.attribution.layers}  # type: ignore[union-attr]
              for impl, r in prefill.items()}
    assert actual == {"eager": {"eager"}, "sdpa": {"sdpa (flash (CPU))"},
                      "sdpa-math": {"sdpa (math)"}}
    cores = {impl: r.attribution.layers[0].core_kernels  # type: ignore[union-attr]
             for impl, r in prefill.items()}
    assert cores["sdpa"] == 1 < cores["eager"]
    assert prefill["sdpa"].sdpa_backend == "flash (CPU)"
    # No core is reached through an op name: the eager core is found by its code region.
    assert prefill["eager"].attribution.layers[0].core_source == "label"  # type: ignore[union-attr]


def test_implementations_agree_with_eager_and_deltas_are_per_layer(llama: ModelRecord) -> None:
    for run in _ok(llama):
        if run.implementation == "eager":
            assert run.max_abs_diff is None
            continue
        assert run.reference == "eager"
        assert run.max_abs_diff is not None and run.max_abs_diff <= TOLERANCE["float32"]
        assert run.within_tolerance is True
    deltas = {(d.phase, d.implementation, d.layer) for d in llama.deltas}
    assert ("prefill", "sdpa", "model.layers.1") in deltas
    assert ("train", "sdpa-math", "model.layers.0") in deltas


def test_decode_reports_the_cache_computed_and_measured(llama: ModelRecord) -> None:
    run = llama.run("sdpa", "decode")
    kv = run.kv_cache
    assert kv is not None
    # 2 layers × 2 (K, V) × 2 KV heads × head dim 8 × 4 bytes
    assert kv.computed_bytes_per_token == 2 * 2 * 2 * 8 * 4
    assert kv.measured_bytes_per_token == kv.computed_bytes_per_token
    assert kv.measured_cache_bytes == 16 * kv.computed_bytes_per_token
    assert run.tokens_per_step == 1 and run.tokens_per_s and run.tokens_per_s > 0
    kv_labels = [c for c in run.attribution.layers[0].components  # type: ignore[union-attr]
                 if c.name == "kv_cache"]
    assert kv_labels and kv_labels[0].cpu_us > 0


def test_kv_bytes_per_token_follow_the_kv_heads() -> None:
    measured = {}
    for kv_heads in (8, 4, 1):
        rec = _profile("llama", ("sdpa",), ("decode",), heads=8, hidden=64, kv_heads=kv_heads)
        kv = rec.run("sdpa", "decode").kv_cache
        assert kv is not None
        measured[kv_heads] = (kv.computed_bytes_per_token, kv.measured_bytes_per_token)
    assert measured[8][0] == 8 * measured[1][0] and measured[4][0] == 4 * measured[1][0]
    assert all(c == m for c, m in measured.values())


def test_training_books_backward_to_the_layers(llama: ModelRecord) -> None:
    run = llama.run("eager", "train")
    att = run.attribution
    assert att is not None and att.backward_attributed
    for layer in att.layers:
        assert layer.backward_cpu_us and layer.backward_cpu_us > 0
        assert math.fsum(c.cpu_us for c in layer.components) == pytest.approx(layer.cpu_us,
                                                                              rel=1e-6)
        assert math.fsum(c.on("work") for c in layer.components) == pytest.approx(
            layer.total_on("work"), rel=1e-6)


def test_a_refused_implementation_is_a_row_and_the_others_run(gpt2: ModelRecord) -> None:
    refused = [r for r in gpt2.runs if r.implementation == "flex_attention"]
    assert {r.status for r in refused} == {"unsupported"}
    assert all("flex" in r.reason.lower() for r in refused)
    assert {r.status for r in gpt2.runs if r.implementation == "sdpa"} == {"ok"}


def test_encoders_have_no_decode_but_their_layers_are_attributed(
        encoders: list[ModelRecord]) -> None:
    bert, vit = encoders
    assert bert.run("sdpa", "decode").status == "unsupported"
    assert "encoder-only" in bert.run("sdpa", "decode").reason
    att = vit.run("sdpa", "prefill").attribution
    assert att is not None and [layer.name for layer in att.layers] == ["layers.0", "layers.1"]
    assert vit.model.seq == 17  # 16 patches and the class token


def test_eager_findings_are_reported_once_with_their_layers(llama: ModelRecord) -> None:
    att = llama.run("eager", "prefill").attribution
    assert att is not None
    scores = [f for f in att.findings if f.rule == "scores-materialised"]
    assert len(scores) == 1
    assert scores[0].data["layers"] == ["model.layers.0", "model.layers.1"]


def test_requested_against_actual_is_a_finding_naming_the_layers() -> None:
    (finding,) = implementation_findings("sdpa", [("layers.0", "sdpa (math)"),
                                                  ("layers.1", "sdpa (math)"),
                                                  ("layers.2", "sdpa (flash (CPU))")])
    assert finding.rule == "attention-fallback"
    assert finding.data["layers"] == ["layers.0", "layers.1"]
    assert implementation_findings("eager", [("layers.0", "eager")]) == []


def test_labels_cost_is_measured_and_small_enough_to_report(llama: ModelRecord) -> None:
    for run in _ok(llama):
        assert run.instrumented_ms is not None and run.instrumentation_overhead is not None


@pytest.mark.parametrize(("fields", "needle"), [
    ({"source": "gpt3"}, "unknown model 'gpt3'"),
    ({"source": "llama", "heads": 8, "kv_heads": 3}, "--kv-heads 3 must divide --heads 8"),
    ({"source": "llama", "implementations": ("flash",)}, "--attn 'flash'"),
    ({"source": "llama", "phases": ("generate",)}, "--phase 'generate'"),
    ({"source": "llama", "layers": 0}, "--layers must be a positive integer"),
    ({"source": "llama", "attention_module": "("}, "--attention-module '('"),
])
def test_spec_mistakes_name_the_flag(fields: dict[str, object], needle: str) -> None:
    with pytest.raises(UsageError) as err:
        ModelSpec(**fields).validate()  # type: ignore[arg-type]
    assert needle in str(err.value)
