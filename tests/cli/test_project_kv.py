"""``attnprof project`` on a decode comparison or a model record: the KV cache each token
keeps and the largest context each target's memory fits, labelled as a model; on a real
model its bytes per token equal what the cache object held (issue 34)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnprof.analysis.kv_capacity import kv_bytes_per_token, kv_fit, kv_shape_of_model
from attnprof.cli.main import main
from attnprof.knowledge.devices import DEVICES
from attnprof.run.compare import compare
from attnprof.workload.settings import Settings, TimingPlan

FAST = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3, max_samples=5,
                                min_warmup_calls=1, rounds=1),
                check_accuracy=False, threads=1)


def test_the_largest_context_is_what_the_weights_leave_over_the_cache() -> None:
    assert kv_bytes_per_token(32, 8, 128, 2) == 131_072  # Llama-3-8B-like: 128 KiB a token
    shape = kv_shape_of_model(32, 8, 128, "bfloat16", 4, 8_000_000_000)
    assert shape is not None and shape.reserved_bytes == 16e9
    fit = kv_fit(shape, "h100-sxm", int(80e9))
    assert fit.largest_context == (80e9 - 16e9) // (4 * 131_072) == 122_070
    full = kv_fit(shape, "small", int(16e9))  # the weights alone fill it
    assert full.largest_context is None and "no room" in full.why_none
    assert kv_shape_of_model(None, 8, 128, "bfloat16", 1, 1) is None  # config lacks layers


def test_a_decode_comparison_gets_its_cache_on_each_target(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    record = compare(variants=["sdpa"], settings=FAST, device="cpu", mode="decode", batch=4,
                     heads=8, kv_heads=2, seq=512, head_dim=64, dtype="bfloat16")
    path, out = tmp_path / "decode.json", tmp_path / "p.json"
    record.save(path)
    assert main(["project", str(path), "--to", "h100-sxm,l4", "--json", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "KV cache on each target (a model)" in text and "never measured" in text
    kv = json.loads(out.read_text())["kv_cache"]
    assert kv["bytes_per_token"] == 2 * 2 * 64 * 2 == 512  # one layer, 2 KV heads, bf16
    for target in kv["targets"]:
        memory = DEVICES[target["target"]].memory_bytes
        assert target["largest_context"] == memory // (4 * 512)
        assert f"{target['largest_context']:,}" in text


def test_a_forward_comparison_has_no_cache_table(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    record = compare(variants=["sdpa"], settings=FAST, device="cpu", batch=1, heads=2,
                     seq=64, head_dim=16)
    path, out = tmp_path / "fwd.json", tmp_path / "p.json"
    record.save(path)
    assert main(["project", str(path), "--to", "l4", "--json", str(out)]) == 0
    assert "KV cache" not in capsys.readouterr().out
    assert "kv_cache" not in json.loads(out.read_text())


def test_a_model_records_cache_matches_what_its_cache_object_held(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers")
    from attnprof.record.model import ModelSettings
    from attnprof.run.model import profile_model
    from attnprof.workload.model_spec import ModelSpec

    monkeypatch.setenv("COLUMNS", "200")
    settings = ModelSettings(plan=FAST.plan, trace_steps=1)
    spec = ModelSpec(source="llama", layers=3, hidden=64, heads=4, kv_heads=2, vocab=64,
                     seq=8, cache_len=32, phases=("decode",), implementations=("sdpa",))
    record = profile_model(spec=spec, settings=settings)
    path, out = tmp_path / "model.json", tmp_path / "p.json"
    record.save(path)
    assert main(["project", str(path), "--to", "a100-40gb,here", "--memory-budget", "1MiB",
                 "--json", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "a model, not a measurement" in text
    kv = json.loads(out.read_text())["kv_cache"]
    run = record.runs[0].kv_cache
    assert run is not None
    # 3 layers × (K, V) × 2 KV heads × 16 head_dim × 4 bytes: the config's count is what
    # the cache object was measured to grow by
    assert kv["bytes_per_token"] == 3 * 2 * 2 * 16 * 4 == run.computed_bytes_per_token
    assert run.measured_bytes_per_token == kv["bytes_per_token"]
    weights = record.model.parameters * 4
    a100, here = kv["targets"]
    assert a100["reserved_bytes"] == weights
    assert a100["largest_context"] == (40e9 - weights) // kv["bytes_per_token"]
    assert weights < 1 << 20  # the tiny model's weights leave room in 1 MiB
    assert here["largest_context"] == ((1 << 20) - weights) // kv["bytes_per_token"]
