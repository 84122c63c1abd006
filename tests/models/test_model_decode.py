"""Decode as it is: both KV caches of an encoder-decoder, per kind (issue 16, item 4), and
a step's peak memory without the profiler's blind spot for blocks freed from before it
started (issue 16, item 10). Sliding-window decode: tests/models/test_model_calls.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from model_helpers import FAST, config_dir

from attnprof.run.model import profile_model
from attnprof.workload.model_spec import ModelSpec

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
    assert done.returncode in (0, 3), done.stderr  # 3: shares unreliable under load
    assert "KV cache in decode" in done.stdout
    assert "Memory block of unknown size" not in done.stderr
    assert "CPUAllocator" not in done.stderr, done.stderr
