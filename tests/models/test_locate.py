"""Locating attention: by what the code does (interface, SDPA call, MHA) or by name."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from model_helpers import TINY
from torch import nn

from attnprof.models.locate import locate
from attnprof.models.sources import load_model
from attnprof.variants.user import load_callable
from attnprof.workload.model_spec import ModelSpec


@pytest.mark.parametrize(("name", "cls", "roles"), [
    ("gpt2", "GPT2Attention", {"qkv_proj", "o_proj"}),
    ("llama", "LlamaAttention", {"q_proj", "k_proj", "v_proj", "o_proj"}),
    ("bert", "BertAttention", {"q_proj", "k_proj", "v_proj", "o_proj"}),
    ("vit", "ViTAttention", {"q_proj", "k_proj", "v_proj", "o_proj"}),
])
def test_builtins_attention_layers_and_projections(name: str, cls: str, roles: set[str]
                                                   ) -> None:
    loaded = load_model(ModelSpec(source=name, **TINY).validate())
    found = locate(loaded.model)
    assert [f.cls for f in found.attention] == [cls, cls]
    assert all("transformers attention interface" in f.recognised_by for f in found.attention)
    assert len(found.layers) == 2
    inside = {r for p, r in found.roles.items() if p.startswith(found.attention[0].path + ".")}
    assert roles <= inside
    rest = {r for p, r in found.roles.items() if p.startswith(found.layers[0] + ".")
            and not p.startswith(found.attention[0].path)}
    # BERT's norms sit inside its attention output and its MLP output, not beside them.
    assert rest == ({"mlp"} if name == "bert" else {"mlp", "norm"})
    assert "embedding" in found.roles.values()


def test_bert_self_attention_is_promoted_to_hold_its_output_projection() -> None:
    found = locate(load_model(ModelSpec(source="bert", **TINY).validate()).model)
    first = found.attention[0]
    assert first.path == "encoder.layer.0.attention"
    assert "its parent holds the output projection" in first.recognised_by
    assert found.roles["encoder.layer.0.attention.output.dense"] == "o_proj"


class CallsSdpa(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.to_q = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.to_q(x)
        return torch.nn.functional.scaled_dot_product_attention(q, q, q)


def test_sdpa_callers_and_mha_are_recognised_by_their_code() -> None:
    model = nn.Sequential(CallsSdpa(), nn.MultiheadAttention(8, 2))
    found = {f.path: f.recognised_by for f in locate(model).attention}
    assert found == {"0": "forward calls scaled_dot_product_attention",
                     "1": "nn.MultiheadAttention"}


def test_hand_written_attention_needs_its_name(factories: Path) -> None:
    model, _ = load_callable(f"{factories}:make")()
    assert locate(model).attention == []
    found = locate(model, r"ScratchAttention")
    assert [f.path for f in found.attention] == ["0.attn", "1.attn"]
    assert found.roles["0.attn.qkv"] == "qkv_proj" and found.roles["0.attn.proj"] == "o_proj"
    assert found.layers == ["0", "1"]
