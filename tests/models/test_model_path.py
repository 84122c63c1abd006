"""--model-path: any architecture transformers builds from a local config.json — beyond
the built-ins, encoder-decoders included — with its weights when the folder has them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from model_helpers import CONFIGS, FAST
from model_helpers import config_dir as _config_dir

from attnprof.measure.accuracy import TOLERANCE
from attnprof.run.model import prepare_model, profile_model
from attnprof.workload.model_spec import ModelSpec

transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_config_json_alone_is_enough(name: str, tmp_path: Path) -> None:
    phases = ("prefill", "decode") if name != "distilbert" else ("prefill",)
    spec = ModelSpec(model_path=str(_config_dir(tmp_path, name)), seq=12,
                     implementations=("eager", "sdpa"), phases=phases)
    record = profile_model(spec=spec, settings=FAST)
    assert record.model.weights == "random"
    assert record.attention and all("attention interface" in a.recognised_by
                                    for a in record.attention)
    for run in record.runs:
        assert run.status == "ok", (run.implementation, run.phase, run.reason)
        assert run.attribution is not None and run.attribution.layers
    sdpa = record.run("sdpa", "prefill")
    assert sdpa.max_abs_diff is not None and sdpa.max_abs_diff <= TOLERANCE["float32"]


def test_encoder_decoder_layers_include_cross_attention_and_relative_bias(
        tmp_path: Path) -> None:
    spec = ModelSpec(model_path=str(_config_dir(tmp_path, "t5")), seq=12,
                     implementations=("sdpa",), phases=("prefill",))
    record = profile_model(spec=spec, settings=FAST)
    assert record.model.family == "encoder-decoder"
    att = record.run("sdpa", "prefill").attribution
    assert att is not None
    names = [layer.name for layer in att.layers]
    assert names == ["encoder.block.0", "encoder.block.1", "decoder.block.0",
                     "decoder.block.1"]
    decoder = att.layers[2]
    assert len(decoder.attention_modules) == 2  # self- and cross-attention
    # T5's relative position bias is computed in the first block's attention.
    first = {c.name for c in att.layers[0].components}
    assert "position" in first


def test_a_sequence_longer_than_the_model_takes_is_refused_up_front(tmp_path: Path) -> None:
    from attnprof.errors import UsageError

    transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, n_positions=32,
                            vocab_size=64).save_pretrained(tmp_path / "g")
    with pytest.raises(UsageError, match="exceeds the model's 32 positions"):
        prepare_model(ModelSpec(model_path=str(tmp_path / "g"), seq=64))


def test_weights_in_the_folder_are_used(tmp_path: Path) -> None:
    cls, sizes = CONFIGS["mistral"]
    torch.manual_seed(7)
    saved = transformers.MistralForCausalLM(getattr(transformers, cls)(**sizes))
    saved.save_pretrained(tmp_path / "m")
    _, loaded, _ = prepare_model(ModelSpec(model_path=str(tmp_path / "m"), seq=8))
    assert loaded.weights == "loaded"
    ids = loaded.kwargs["input_ids"]
    with torch.no_grad():
        assert torch.equal(loaded.model(ids).logits, saved.eval()(ids).logits)


@pytest.mark.parametrize("kind", ["fifo", "folder", "dangling", "shard-fifo"])
def test_weights_that_are_not_a_file_are_named_not_taken_for_none(kind: str,
                                                                   tmp_path: Path) -> None:
    # A FIFO, a folder or a dangling link where the weights are read as "no weights" by a
    # plain is_file(): the model ran on random weights without a word (a FIFO shard would
    # block transformers' read). Each is refused in one line naming the file and what it is.
    from attnprof.errors import UsageError

    folder = tmp_path / "g"
    transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, n_positions=32,
                            vocab_size=64).save_pretrained(folder)
    name = "model-00001-of-00002.safetensors" if kind == "shard-fifo" else "model.safetensors"
    weights = folder / name
    if kind in ("fifo", "shard-fifo"):
        os.mkfifo(weights)
    elif kind == "folder":
        weights.mkdir()
    else:
        weights.symlink_to(tmp_path / "gone.safetensors")
    said = {"fifo": "it is a FIFO", "shard-fifo": "it is a FIFO", "folder": "it is a directory",
            "dangling": "does not exist"}[kind]
    with pytest.raises(UsageError) as caught:
        prepare_model(ModelSpec(model_path=str(folder), seq=8))
    message = str(caught.value)
    assert f"the weights file {name!r}" in message and said in message, message
    assert "\n" not in message
