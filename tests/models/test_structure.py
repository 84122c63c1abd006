"""What the parts of attention do, read from one forward by how data flows: projections
whatever they are called (issue 16 item 3), and self- against cross-attention in decoder
blocks (item 5), shown apart in the attribution."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from model_helpers import FAST
from torch import nn

from attnprof.models.instrument import labelled
from attnprof.models.locate import locate
from attnprof.record.model import ModelRecord
from attnprof.run.model import profile_model
from attnprof.workload.model_spec import ModelSpec

transformers = pytest.importorskip("transformers")

DIM, HEADS = 16, 2


class Custom(nn.Module):
    """Hand-written attention whose projections have the names a user chose: the inputs
    ``a``/``b``/``c``, the output under ``out_name`` (an ``nn.Sequential`` when asked)."""

    def __init__(self, out_name: str, sequential: bool = False, sdpa: bool = False) -> None:
        super().__init__()
        self.a, self.b, self.c = (nn.Linear(DIM, DIM) for _ in range(3))
        self.out_name, self.sdpa = out_name, sdpa
        out = nn.Linear(DIM, DIM)
        setattr(self, out_name, nn.Sequential(out, nn.Dropout(0.0)) if sequential else out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = (p(x).view(b, s, HEADS, -1).transpose(1, 2) for p in (self.a, self.b, self.c))
        if self.sdpa:
            out = F.scaled_dot_product_attention(q, k, v)
        else:
            out = (q @ k.transpose(-2, -1) / math.sqrt(DIM // HEADS)).softmax(-1) @ v
        return getattr(self, self.out_name)(out.transpose(1, 2).reshape(b, s, DIM))


class Block(nn.Module):
    def __init__(self, attention: nn.Module) -> None:
        super().__init__()
        self.attn = attention
        self.mlp = nn.Sequential(nn.Linear(DIM, 2 * DIM), nn.GELU(), nn.Linear(2 * DIM, DIM))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(x)
        return x + self.mlp(x)


OUTPUTS = [("out", False, "out"), ("proj", False, "proj"), ("c_proj", False, "c_proj"),
           ("dense", False, "dense"), ("wo", False, "wo"), ("to_out", True, "to_out.0")]


@pytest.mark.parametrize(("name", "sequential", "path"), OUTPUTS)
@pytest.mark.parametrize("sdpa", [False, True], ids=["by-hand", "sdpa"])
def test_the_output_projection_is_the_one_fed_by_the_core(name: str, sequential: bool,
                                                          path: str, sdpa: bool) -> None:
    model = nn.Sequential(*(Block(Custom(name, sequential, sdpa)) for _ in range(2))).eval()
    x = torch.randn(1, 5, DIM)
    found = locate(model, None if sdpa else "Custom", probe=lambda: model(x))
    inside = {p.removeprefix("0.attn."): r for p, r in found.roles.items()
              if p.startswith("0.attn.")}
    # Whatever they are called: the Linear applied to the attention output is o_proj,
    # the ones whose output reaches the queries, keys and values are q/k/v_proj.
    assert inside == {"a": "q_proj", "b": "k_proj", "c": "v_proj", path: "o_proj"}
    assert found.roles["0.mlp"] == "mlp"  # after the output projection: not another one


def test_names_that_lie_are_not_believed() -> None:
    """A module called ``q`` that projects the output, and ``o`` that projects the query."""
    attention = Custom("q")
    attention.o = attention.a  # the query projection, under the name of an output one
    del attention.a
    attention.forward = lambda x: _liar(attention, x)  # type: ignore[method-assign]
    model = Block(attention).eval()
    x = torch.randn(1, 5, DIM)
    found = locate(model, "Custom", probe=lambda: model(x))
    assert found.roles["attn.o"] == "q_proj" and found.roles["attn.q"] == "o_proj"
    # Without a forward to read, names decide (and are wrong here): the fallback.
    named = locate(model, "Custom")
    assert named.roles["attn.o"] == "o_proj" and named.roles["attn.q"] == "q_proj"


def _liar(m: Custom, x: torch.Tensor) -> torch.Tensor:
    q, k, v = m.o(x), m.b(x), m.c(x)  # type: ignore[operator]
    out = (q @ k.transpose(-2, -1)).softmax(-1) @ v
    return m.q(out)  # type: ignore[operator]


def test_an_output_projection_named_out_is_not_core(tmp_path: Path) -> None:
    """End to end: the ``out`` Linear's time is the output projection's, and the core is
    the module's own time without it."""
    torch.manual_seed(0)
    model = nn.Sequential(Block(Custom("out")), Block(Custom("out"))).eval()
    record = profile_model(model, torch.randn(1, 5, DIM), settings=FAST,
                           attention_module="Custom")
    att = record.runs[0].attribution
    assert att is not None
    for layer in att.layers:
        names = [c.name for c in layer.components]
        assert {"q_proj", "k_proj", "v_proj", "o_proj", "core"} <= set(names)
        assert layer.core_source == "inferred"
    parts = record.attention[0].parts
    assert "o_proj 0.attn.out" in parts and "q_proj 0.attn.a" in parts


def test_labels_wrap_forward_and_leave_no_trace(tmp_path: Path) -> None:
    """Labels are forward wrappers, not hooks (hooks put every call of a hooked module on
    nn.Module's slow path): the signature stays readable, nothing is left after, and an
    instance forward someone set before is wrapped and put back."""
    model = nn.Sequential(Block(Custom("out", sdpa=True))).eval()
    mine = model[0].mlp.forward
    model[0].mlp.forward = mine  # an instance forward of the user's own
    found = locate(model)
    before = {p: inspect.signature(m.forward) for p, m in found.modules.items()}
    with labelled(found):
        for path in found.roles:
            module = found.modules[path]
            assert "forward" in module.__dict__
            assert not module._forward_hooks and not module._forward_pre_hooks
            assert inspect.signature(module.forward) == before[path]
        model(torch.randn(1, 5, DIM))
    assert model[0].mlp.__dict__["forward"] is mine
    assert all("forward" not in m.__dict__ for p, m in found.modules.items()
               if p != "0.mlp")


def _decoder_models() -> dict[str, tuple[nn.Module, tuple[object, ...] | dict[str, object]]]:
    torch.manual_seed(0)
    ids = torch.randint(3, 64, (1, 6))
    sizes = {"d_model": 16, "encoder_layers": 1, "decoder_layers": 2,
             "encoder_attention_heads": 2, "decoder_attention_heads": 2,
             "encoder_ffn_dim": 32, "decoder_ffn_dim": 32, "vocab_size": 64,
             "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
             "decoder_start_token_id": 1}
    bart = transformers.BartModel(transformers.BartConfig(**sizes,
                                                          max_position_embeddings=32))
    whisper = transformers.WhisperModel(transformers.WhisperConfig(
        **sizes, num_mel_bins=8, max_source_positions=16, max_target_positions=16))
    torch_decoder = nn.TransformerDecoder(
        nn.TransformerDecoderLayer(DIM, 2, 32, batch_first=True), 2)
    return {
        "bart": (bart, {"input_ids": ids, "decoder_input_ids": ids}),
        "whisper": (whisper, {"input_features": torch.randn(1, 8, 32),
                              "decoder_input_ids": ids}),
        "torch": (torch_decoder, (torch.randn(1, 6, DIM), torch.randn(1, 7, DIM))),
    }


@pytest.mark.parametrize("name", ["bart", "whisper", "torch"])
def test_decoder_blocks_show_self_and_cross_attention_apart(name: str) -> None:
    model, inputs = _decoder_models()[name]
    record = profile_model(model, inputs, settings=FAST)
    check_self_and_cross(record, decoder_layers=2, projections=name != "torch")


def test_t5_decoder_blocks_show_self_and_cross_attention_apart(tmp_path: Path) -> None:
    transformers.T5Config(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                          num_heads=4, vocab_size=64, decoder_start_token_id=0
                          ).save_pretrained(tmp_path)
    record = profile_model(spec=ModelSpec(model_path=str(tmp_path), seq=12,
                                          implementations=("eager",), phases=("prefill",)),
                           settings=FAST)
    check_self_and_cross(record, decoder_layers=2)
    kinds = {a.path: a.kind for a in record.attention}
    assert kinds["decoder.block.0.layer.1.EncDecAttention"] == "cross"
    assert kinds["decoder.block.0.layer.0.SelfAttention"] == "self"


def check_self_and_cross(record: ModelRecord, decoder_layers: int,
                         projections: bool = True) -> None:
    """The decoder's layers carry both kinds, apart, and they add up to attention."""
    run = record.runs[0]
    att = run.attribution
    assert run.status == "ok" and att is not None
    assert sum(a.kind == "cross" for a in record.attention) == decoder_layers
    crossed = [lay for lay in att.layers if any(k.name == "cross_attention"
                                                for k in lay.kinds)]
    assert len(crossed) == decoder_layers
    for layer in crossed:
        kinds = {k.name: k for k in layer.kinds}
        assert set(kinds) == {"self_attention", "cross_attention"}
        assert kinds["self_attention"].cpu_us > 0 and kinds["cross_attention"].cpu_us > 0
        assert math.fsum(k.cpu_us for k in layer.kinds) == pytest.approx(
            layer.attention_cpu_us, rel=1e-9)
        names = {c.name for c in layer.components}
        assert "core" in names and "cross_core" in names, names
        # Each kind's own projections: modules found by data flow in transformers'
        # attention; nn.MultiheadAttention's self-attention takes torch's fused fast path
        # (one native op, projections inside), its cross-attention a functional one.
        assert "cross_qkv_proj" in names or {"cross_q_proj", "cross_k_proj"} <= names, names
        if projections:
            assert {"q_proj", "k_proj", "v_proj", "o_proj", "cross_o_proj"} <= names, names
    assert {k.name for k in att.kinds} == {"self_attention", "cross_attention"}
    assert math.fsum(k.cpu_us for k in att.kinds) == pytest.approx(att.attention_cpu_us,
                                                                   rel=1e-9)


class NoOutput(nn.Module):
    """Attention that returns the heads merged, leaving the output projection to its
    parent (as BERT's self-attention leaves it to its SelfOutput)."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, HEADS, -1).transpose(1, 3).unbind(2)
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, DIM)


class Holder(nn.Module):
    def __init__(self, with_mlp: bool) -> None:
        super().__init__()
        self.inner, self.dense = NoOutput(), nn.Linear(DIM, DIM)
        self.norm = nn.LayerNorm(DIM)
        self.fc = nn.Linear(DIM, DIM) if with_mlp else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(x + self.dense(self.inner(x)))
        return x if self.fc is None else x + self.fc(x)


@pytest.mark.parametrize("with_mlp", [False, True])
def test_a_parent_is_taken_only_when_it_holds_just_the_output_projection(
        with_mlp: bool) -> None:
    model = nn.Sequential(*(Block(Holder(with_mlp)) for _ in range(2))).eval()
    found = locate(model, probe=lambda: model(torch.randn(1, 5, DIM)))
    paths = [f.path for f in found.attention]
    assert found.roles["0.attn.inner.qkv"] == "qkv_proj"
    if with_mlp:  # it holds an MLP too: attention stays the module found
        assert paths == ["0.attn.inner", "1.attn.inner"]
        assert found.roles.get("0.attn.dense") != "o_proj"
    else:  # all it holds besides is the projection of the found module's output
        assert paths == ["0.attn", "1.attn"]
        assert "its parent holds the output projection" in found.attention[0].recognised_by
        assert found.roles["0.attn.dense"] == "o_proj"
        assert found.roles["0.attn.norm"] == "norm"
