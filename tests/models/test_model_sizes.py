"""Every size a config or a flag gives is checked — positive, consistent, within the
model's positions and within memory — before anything is built: one line naming the key
and the fix (issue 16, item 8; issue 21, item 11)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from attnprof.errors import UsageError
from attnprof.run.model import prepare_model
from attnprof.workload.model_spec import ModelSpec

transformers = pytest.importorskip("transformers")

LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "vocab_size": 64}


def _folder(tmp_path: Path, **changes: Any) -> str:
    folder = tmp_path / "cfg"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps({**LLAMA, **changes}), encoding="utf-8")
    return str(folder)


@pytest.mark.parametrize(("changes", "needle"), [
    ({"num_attention_heads": -8}, "config.json's num_attention_heads is -8; it must be a "
                                  "positive integer"),
    ({"num_attention_heads": 0}, "config.json's num_attention_heads is 0"),
    ({"vocab_size": -1}, "config.json's vocab_size is -1"),
    ({"head_dim": -2}, "config.json's head_dim is -2"),
    ({"num_hidden_layers": True}, "config.json's num_hidden_layers is True"),
    ({"hidden_size": 64.5}, "config.json's hidden_size is 64.5"),
    ({"num_key_value_heads": 3}, "3 key/value heads do not divide its 4 attention heads"),
    ({"hidden_size": 66}, "hidden size 66 is not a multiple of its 4 attention heads"),
    ({"hidden_size": 2**40}, "needs about"),
    ({"num_hidden_layers": 10**9}, "its config.json states layers 1,000,000,000"),
    ({"vocab_size": 2**62}, "needs about"),
    ({"max_position_embeddings": 32}, "--seq 128 exceeds the model's 32 positions"),
    ({"model_type": "notamodelatall_zzz"}, "model_type 'notamodelatall_zzz' is not an "
                                           "architecture transformers"),
    ({"model_type": None}, "has no model_type"),
])
def test_a_bad_config_is_one_line_before_anything_is_built(
        changes: dict[str, Any], needle: str, tmp_path: Path) -> None:
    start = time.perf_counter()
    with pytest.raises(UsageError) as err:
        prepare_model(ModelSpec(model_path=_folder(tmp_path, **changes)))
    message = str(err.value)
    assert needle in message and "\n" not in message
    # Refused from the sizes, not after building a billion layers (minutes).
    assert time.perf_counter() - start < 60


def test_an_unknown_model_type_is_said_whole_not_cut_mid_word(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        prepare_model(ModelSpec(model_path=_folder(tmp_path, model_type="zzz_model")))
    assert str(err.value).endswith("fix the name, or upgrade transformers if it is newer")


@pytest.mark.parametrize(("fields", "needle"), [
    ({"source": "gpt2", "seq": 5000}, "--seq 5000 exceeds the model's 1024 positions"),
    ({"source": "bert", "seq": 513}, "--seq 513 exceeds the model's 512 positions"),
    ({"source": "gpt2", "seq": 16, "phases": ("decode",), "cache_len": 1020},
     "--cache-len 1020 + --new-tokens 8 in decode (1028 positions) exceeds"),
    ({"source": "gpt2", "layers": 10**9}, "reduce --layers"),
    ({"source": "llama", "hidden": 2**40, "heads": 16}, "reduce --layers, --hidden"),
])
def test_builtin_flags_past_the_model_or_memory_are_refused(fields: dict[str, Any],
                                                           needle: str) -> None:
    with pytest.raises(UsageError) as err:
        prepare_model(ModelSpec(**fields))
    assert needle in str(err.value)


def test_a_decode_cache_that_cannot_fit_is_refused_where_positions_have_no_limit(
        tmp_path: Path) -> None:
    from model_helpers import config_dir

    # T5's relative positions allow any length, so only memory stops 10**12 new tokens.
    spec = ModelSpec(model_path=str(config_dir(tmp_path, "t5")), seq=8, phases=("decode",),
                     new_tokens=10**12)
    with pytest.raises(UsageError, match="lower --seq, --cache-len, --new-tokens or --batch"):
        prepare_model(spec)


def test_positions_up_to_the_limit_run_and_relative_positions_have_none(
        tmp_path: Path) -> None:
    from attnprof.models.fits import position_limit

    # Decode reaches --cache-len + --new-tokens positions, not --seq + both.
    _, loaded, _ = prepare_model(ModelSpec(source="gpt2", layers=1, hidden=32, heads=2,
                                           vocab=64, seq=1024, phases=("decode",),
                                           cache_len=1016, new_tokens=8))
    assert loaded.model.config.n_positions == 1024  # type: ignore[union-attr]
    t5 = transformers.T5Config(d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4)
    assert position_limit(t5) == (None, "relative position buckets: any length runs")
