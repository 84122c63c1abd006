"""``attnprof.capture`` under activation checkpointing, autocast bf16 and torch.compile."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from known_loop import KnownCostModel
from torch import nn
from torch.utils.checkpoint import checkpoint

import attnprof
from attnprof.torch_state import TorchState


class Checkpointed(KnownCostModel):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = checkpoint(layer, x, use_reentrant=False)
        return x


class SdpaBlock(nn.Module):
    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.o_proj, self.mlp = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim), \
            nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = (y.view(b, t, self.heads, -1).transpose(1, 2)
                   for y in self.qkv(x).chunk(3, dim=-1))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(out.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(x)


class SdpaModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(SdpaBlock() for _ in range(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def _train(model: nn.Module, cap: object, x: torch.Tensor, steps: int = 5,
           bf16: bool = False) -> None:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(steps):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(x).float().square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        cap.step()  # type: ignore[attr-defined]


def test_activation_checkpointing(tmp_path: Path) -> None:
    model = Checkpointed()
    with attnprof.capture(model, out=tmp_path, store=False,
                          attention_module="SlowAttention") as cap:
        _train(model, cap, torch.randn(4, 16))
    report = cap.record.reports[0]  # type: ignore[union-attr]
    assert report.model is not None and report.model.steps == 3
    share = report.model.attention_share
    assert share is not None and 0 < share < 1
    # The recomputed forward runs inside the backward, labelled again: more labels a step
    # than the forward has (2 layers × attention, MLP and the layer itself).
    assert report.attnprof["capture"]["labels_per_step"] > 6  # type: ignore[index]
    assert all("forward" not in m.__dict__ for m in model.modules())


def test_autocast_bf16(tmp_path: Path) -> None:
    model = SdpaModel()
    state = TorchState()
    with attnprof.capture(model, out=tmp_path, store=False) as cap:
        _train(model, cap, torch.randn(2, 8, 16), bf16=True)
    assert [c for c in state.restore() if not c.startswith("RNG state")] == []
    report = cap.record.reports[0]  # type: ignore[union-attr]
    assert report.model is not None and len(report.model.layers) == 2
    assert all(layer.actual and layer.actual.startswith("sdpa") for layer in report.model.layers)
    ops = {k.name for region in report.regions for k in region.kernels}
    assert any("scaled_dot_product" in name or "bmm" in name or "mm" in name for name in ops)


@pytest.mark.slow
def test_a_compiled_model_is_captured_without_labels_and_says_so(tmp_path: Path) -> None:
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    model = SdpaModel()
    compiled = torch.compile(model, backend="eager")
    x = torch.randn(2, 8, 16)
    compiled(x)  # compiled before the capture, as a user's warm-up does
    counters.clear()
    with attnprof.capture(compiled, out=tmp_path, store=False) as cap:
        _train(compiled, cap, x)
    assert not counters["graph_break"]  # the compiled graph ran as compiled, unbroken
    assert any("torch.compile'd" in note for note in cap.notes)
    report = cap.record.reports[0]  # type: ignore[union-attr]
    assert report.model is None  # no labels: no per-layer table
    assert "torch.compile'd" in report.attnprof["capture"]["notes"][0]  # type: ignore[index]
    assert report.regions and report.regions[0].instances == 3
