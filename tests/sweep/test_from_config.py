"""``--from-config DIR``: heads, K/V heads, head dim and window from a transformers
config.json (read as JSON; nothing downloaded), its max positions a limit on --seq."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.record.compare import RunRecord
from attnprof.record.sweep import SweepRecord

#: A Mistral-like config, as save_pretrained writes it (the fields read, and some others).
MISTRAL = {"architectures": ["MistralForCausalLM"], "model_type": "mistral",
           "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
           "sliding_window": 32, "max_position_embeddings": 128, "vocab_size": 64}
FAST = ["--min-time", "0.01", "--rounds", "1", "--batch", "1"]


def _config(tmp_path: Path, data: object, name: str = "model") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def test_compare_takes_the_sizes_from_the_config(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    folder, out = _config(tmp_path, MISTRAL), tmp_path / "run.json"
    assert main(["compare", "--from-config", str(folder), "-v", "sdpa", "--seq", "64",
                 *FAST, "--json", str(out)]) == 0
    w = RunRecord.load(out).workload
    assert (w.heads, w.kv_heads, w.head_dim, w.window) == (4, 2, 16, 32)
    # A flag given wins over the config; a config without K/V heads is multi-head.
    gpt2 = _config(tmp_path, {"n_head": 4, "n_embd": 32, "n_positions": 1024}, "gpt2")
    assert main(["compare", "--from-config", str(gpt2), "-v", "sdpa", "--seq", "32",
                 "--head-dim", "8", *FAST, "--json", str(out)]) == 0
    w = RunRecord.load(out).workload
    assert (w.heads, w.kv_heads, w.head_dim) == (4, 4, 8)
    capsys.readouterr()


def test_recommend_answers_gqa_or_mha_for_the_configs_heads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, out = _config(tmp_path, MISTRAL), tmp_path / "rec.json"
    assert main(["recommend", "--from-config", str(folder), "--kv-heads", "2,4", "--seq",
                 "64", "-v", "sdpa", *FAST, "--executor", "inline", "--json", str(out)]) == 0
    rec = SweepRecord.load(out).recommendation
    assert rec is not None
    assert [(r.structure, r.heads, r.head_dim) for r in rec.structures] == [
        ("GQA 2:1", 4, 16), ("MHA", 4, 16)]
    capsys.readouterr()


@pytest.mark.parametrize(("content", "flags", "said"), [
    (MISTRAL, ["--seq", "256"], "--seq 256 is beyond the 128 positions of --from-config"),
    ("{not json", [], "is not JSON"),
    ([1, 2], [], "is not a JSON object"),
    ({"hidden_size": 64}, [], "states no attention heads"),
    ({"num_attention_heads": 3, "hidden_size": 64}, [], "states neither head_dim nor"),
    (None, [], "has no config.json"),
])
@pytest.mark.parametrize("command", ["compare", "recommend", "sweep"])
def test_a_bad_config_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             content: object, flags: list[str], said: str,
                                             command: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    if content is not None:
        text = content if isinstance(content, str) else json.dumps(content)
        (folder / "config.json").write_text(text, encoding="utf-8")
    extra = ["--seq", "64"] if command != "compare" and not flags else []
    assert main([command, "--from-config", str(folder), *flags, *extra, "--no-store"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("attnprof: error:") and said in line, line
