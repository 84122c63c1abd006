"""Decode as it is: both KV caches of an encoder-decoder, per kind (issue 16, item 4), and
a step's peak memory without the profiler's blind spot for blocks freed from before it
started (issue 16, item 10)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from model_helpers import FAST, config_dir

from attnprof.run.model import profile_model
from attnprof.spec.model_spec import ModelSpec

transformers = pytest.importorskip("transformers")


def test_t5_decode_reports_the_self_and_the_cross_attention_cache(tmp_path: Path) -> None:
    # Three decoder layers beside two encoder layers: the caches live in the decoder's.
    folder = config_dir(tmp_path, "t5", num_decoder_layers=3)
    spec = ModelSpec(model_path=str(folder), seq=12, cache_len=20, phases=("decode",),
                     implementations=("sdpa",))
    run = profile_model(spec=spec, settings=FAST).run("sdpa", "decode")
    assert run.status == "ok", run.reason
    kv = run.kv_cache
    assert kv is not None and kv.cross is not None
    per_token = 3 * 2 * 4 * 8 * 4  # decoder layers × (K, V) × heads × d_kv × fp32
    assert kv.computed_bytes_per_token == per_token == kv.measured_bytes_per_token
    assert kv.measured_cache_bytes == 20 * per_token
    cross = kv.cross
    assert cross.encoder_len == 12
    assert cross.computed_bytes == cross.measured_bytes == 12 * per_token
    assert cross.measured_bytes_per_token == 0  # made once from the encoder output
    assert kv.measured_total_bytes == 32 * per_token


def test_a_decoder_has_no_cross_cache() -> None:
    spec = ModelSpec(source="gpt2", layers=1, hidden=32, heads=2, vocab=64, seq=8,
                     phases=("decode",))
    kv = profile_model(spec=spec, settings=FAST).runs[0].kv_cache
    assert kv is not None and kv.cross is None
    assert kv.measured_total_bytes == kv.measured_cache_bytes


def test_decode_peak_memory_is_the_step_not_the_whole_cache() -> None:
    """Each step replaces the cache's tensors; frees of tensors made before the profiler
    started were invisible to it, so the peak counted the whole replaced cache."""
    spec = ModelSpec(source="llama", layers=4, hidden=64, heads=4, kv_heads=4, vocab=64,
                     seq=8, cache_len=512, phases=("decode",), implementations=("sdpa",))
    run = profile_model(spec=spec, settings=FAST).runs[0]
    kv = run.kv_cache
    assert kv is not None and kv.measured_cache_bytes == 512 * 4 * 2 * 4 * 16 * 4
    assert run.peak_memory_bytes is not None
    # One layer's K and V are copied at a time (plus the step's activations): about a
    # quarter of the four layers' cache, never all of it.
    assert run.peak_memory_bytes < 0.5 * kv.measured_cache_bytes


def test_decode_prints_no_allocator_warning(tmp_path: Path) -> None:
    code = ("from attnprof.cli.main import main; import sys; sys.exit(main(['model', "
            "'gpt2', '--layers', '1', '--hidden', '32', '--heads', '2', '--vocab', '64', "
            "'--seq', '16', '--phase', 'decode', '--min-time', '0.01', '--rounds', '1', "
            "'--trace-steps', '1']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "KV cache in decode" in done.stdout
    assert "Memory block of unknown size" not in done.stderr
    assert "CPUAllocator" not in done.stderr, done.stderr


def test_a_sliding_window_is_said_per_layer_and_its_flops_count_admitted_pairs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Mistral config with ``sliding_window``: each layer's mask is read, the window is
    said applied with what it removed, core FLOPs count only the admitted pairs (as
    compare's sliding-window variant counts them), and decode runs against the window's
    bounded cache (issue 16, item 7)."""
    from attnprof.record.model import ModelRecord
    from attnprof.render import TerminalRenderer
    from attnprof.spec import costs
    from attnprof.spec.workload import Workload
    from attnprof.variants import get_variant

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
