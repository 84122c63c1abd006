"""Each step's attention calls, read from the calls themselves: a sliding window said per
layer with what it removes, and core FLOPs that count only the pairs a mask admits, as
compare's sliding-window variant counts them (issue 16, item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest
from model_helpers import FAST, config_dir

from attnprof.run.model import profile_model
from attnprof.workload.model_spec import ModelSpec

transformers = pytest.importorskip("transformers")


def test_a_sliding_window_is_said_per_layer_and_its_flops_count_admitted_pairs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Mistral config with ``sliding_window``: each layer's mask is read, the window is
    said applied with what it removed, core FLOPs count only the admitted pairs (as
    compare's sliding-window variant counts them), and decode runs against the window's
    bounded cache (issue 16, item 7)."""
    from attnprof.record.model import ModelRecord
    from attnprof.render import TerminalRenderer
    from attnprof.variants import get_variant
    from attnprof.workload import costs
    from attnprof.workload.problem import Workload

    folder = config_dir(tmp_path, "mistral", sliding_window=4)
    spec = ModelSpec(model_path=str(folder), seq=12, cache_len=12,
                     phases=("prefill", "decode"), implementations=("eager", "sdpa"))
    record = profile_model(spec=spec, settings=FAST)
    for run in record.runs:
        assert run.status == "ok", (run.implementation, run.phase, run.reason)
        assert [c.layer for c in run.calls] == ["model.layers.0", "model.layers.1"]
        assert all(c.window == 4 and c.window_applied for c in run.calls)
    prefill = record.run("sdpa", "prefill")
    (first, _) = prefill.calls
    assert (first.admitted_pairs, first.window_pairs, first.full_pairs) == (42, 42, 78)
    assert first.widest == 4 and first.window_saves == pytest.approx(1 - 42 / 78)
    # The same count compare's sliding-window variant makes for one layer's shape.
    workload = Workload(batch=1, heads=4, kv_heads=2, seq=12, head_dim=8, device="cpu")
    window = get_variant("sliding-window").window(workload.replace(window=4))
    assert window == 4
    one_layer = costs.forward_flops(workload, window)
    assert first.flops == one_layer and prefill.core_flops == 2 * one_layer
    decode = record.run("sdpa", "decode")
    assert [c.window_pairs for c in decode.calls] == [4, 4]  # not the 13 keys cached
    assert decode.core_flops == 2 * 4 * 4 * 4 * 8
    kv = decode.kv_cache
    assert kv is not None and kv.window == 4 and kv.window_layers == 2
    # A full sliding-window layer holds window − 1 tokens and does not grow.
    assert kv.measured_cache_bytes == kv.computed_cache_bytes == 2 * 3 * 2 * 2 * 8 * 4
    assert kv.measured_bytes_per_token == kv.computed_bytes_per_token == 0
    text = TerminalRenderer(width=200).render(ModelRecord.from_json(record.to_json()))
    assert ("sliding window 4 applied in 2 of 2 attention calls (model.layers.0 … "
            "model.layers.1) · prefill (seen in the mask)") in text
    assert "42 of 78 (query, key) pairs at 12×12, 46% fewer" in text


def test_a_full_attention_model_counts_causal_pairs_flash_attention_style() -> None:
    spec = ModelSpec(source="gpt2", layers=2, hidden=32, heads=2, vocab=64, seq=16,
                     phases=("prefill", "train"), implementations=("sdpa",))
    record = profile_model(spec=spec, settings=FAST)
    prefill, train = record.run("sdpa", "prefill"), record.run("sdpa", "train")
    per_layer = 4 * 1 * 2 * (16 * 16 / 2) * 16  # causal ×0.5, head dim 16
    assert [c.flops for c in prefill.calls] == [per_layer, per_layer]
    assert all(c.window is None and c.window_saves is None for c in prefill.calls)
    assert train.core_flops == 3.5 * prefill.core_flops  # type: ignore[operator]


def test_a_call_that_does_not_say_whether_it_is_causal_has_no_flops(factories: Path) -> None:
    """Hand-written attention passing is_causal (or not) to SDPA inside its forward: the
    call does not show it, so its FLOPs are not guessed; nn.MultiheadAttention's forward
    takes is_causal (default False), so its call says."""
    spec = ModelSpec(source=f"{factories}:make", attention_module="ScratchAttention")
    (run,) = profile_model(spec=spec, settings=FAST).runs
    assert [c.causal for c in run.calls] == [None, None] and run.core_flops is None
    (mha,) = profile_model(spec=ModelSpec(source=f"{factories}:make_kwargs"),
                           settings=FAST).runs
    (call,) = mha.calls
    assert call.causal is False and (call.q_len, call.k_len) == (8, 8)
    assert mha.core_flops == call.flops == 4 * 2 * 4 * 64 * 8  # B·H·Sq·Sk·D, dense
