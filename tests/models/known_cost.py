"""Models whose costs are known: Python-level busy work of a set duration in attention and
in the MLP (and, in one layout, identical matmuls of known FLOPs), in several layouts.

Busy work is a wall-clock wait, so its duration does not depend on the machine's load; each
module also times its own forward with ``perf_counter`` into :data:`CALLS` (no profiler, no
label), so a test can compare the attribution of a traced step with what that same step
measured of itself.
"""

from __future__ import annotations

import math
import time

import torch
import torch.nn.functional as F
from torch import nn

#: (what, start, end) of every timed forward, in call order: ``step``, ``attention``.
CALLS: list[tuple[str, float, float]] = []
DIM = 32
HEADS = 4
ATTENTION_S = 0.006
MLP_S = 0.014


def busy(seconds: float) -> None:
    """Python-level work of a known wall-clock duration."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def timed(what: str, fn: object) -> object:
    t0 = time.perf_counter()
    out = fn()  # type: ignore[operator]
    CALLS.append((what, t0, time.perf_counter()))
    return out


class Projections(nn.Module):
    """Q, K, V and output projections (tiny: their tensor work is negligible)."""

    def __init__(self) -> None:
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(DIM, DIM) for _ in range(3))
        self.o_proj = nn.Linear(DIM, DIM)

    def split(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, s, _ = x.shape
        return tuple(p(x).view(b, s, HEADS, -1).transpose(1, 2)
                     for p in (self.q_proj, self.k_proj, self.v_proj))

    def merge(self, out: torch.Tensor) -> torch.Tensor:
        b, _, s, _ = out.shape
        return self.o_proj(out.transpose(1, 2).reshape(b, s, DIM))


class BusyAttention(Projections):
    """SDPA attention that also spends :data:`ATTENTION_S` in Python."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def run() -> torch.Tensor:
            busy(ATTENTION_S)
            q, k, v = self.split(x)
            return self.merge(F.scaled_dot_product_attention(q, k, v))
        return timed("attention", run)  # type: ignore[return-value]


class PerHeadAttention(Projections):
    """Hand-written attention with a Python loop over heads, each head spending a quarter
    of :data:`ATTENTION_S`: the loop's overhead is attention's."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def run() -> torch.Tensor:
            q, k, v = self.split(x)
            heads = []
            for h in range(HEADS):
                busy(ATTENTION_S / HEADS)
                scores = q[:, h] @ k[:, h].transpose(-2, -1) / math.sqrt(DIM // HEADS)
                heads.append(scores.softmax(-1) @ v[:, h])
            return self.merge(torch.stack(heads, dim=1))
        return timed("attention", run)  # type: ignore[return-value]


class MatmulAttention(Projections):
    """Attention whose cost is tensor work: 3 matmuls of the same shape as the MLP's 7."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def run() -> torch.Tensor:
            for _ in range(3):
                self.weight @ self.weight
            q, k, v = self.split(x)
            return self.merge(F.scaled_dot_product_attention(q, k, v))
        return timed("attention", run)  # type: ignore[return-value]


class AlternatingAttention(Projections):
    """Heavy (matmuls) in two calls of every three, shifted by its layer's index: the
    layers' attention varies from step to step."""

    def __init__(self, index: int, calls: list[int], weight: torch.Tensor) -> None:
        super().__init__()
        self.index, self.calls, self.weight = index, calls, weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (self.calls[0] - self.index) % 3 in (0, 1):
            for _ in range(12):
                self.weight @ self.weight
        q, k, v = self.split(x)
        return self.merge(F.scaled_dot_product_attention(q, k, v))


class Counting(nn.Module):
    """Counts its forwards in ``calls[0]`` before running ``inner``."""

    def __init__(self, inner: nn.Module, calls: list[int]) -> None:
        super().__init__()
        self.inner, self.calls = inner, calls

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls[0] += 1
        return self.inner(x)


class BusyMLP(nn.Module):
    def __init__(self, weight: torch.Tensor | None = None) -> None:
        super().__init__()
        self.fc = nn.Linear(DIM, DIM)
        self.weight = weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight is None:
            busy(MLP_S)
        else:
            for _ in range(7):
                self.weight @ self.weight
        return self.fc(x)


class Block(nn.Module):
    """A residual block: attention then MLP, or MLP then attention (``last``)."""

    def __init__(self, attention: nn.Module, mlp: nn.Module, last: bool = False) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.attn, self.mlp, self.last = attention, mlp, last

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.last:
            x = x + self.mlp(x)
            return x + self.attn(self.norm(x))
        x = x + self.attn(self.norm(x))
        return x + self.mlp(x)


class Mixer(nn.Module):
    """Attention two modules deep: a mixer holding a gate and the attention."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(DIM, DIM)
        self.inner = nn.ModuleDict({"attention": BusyAttention()})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner["attention"](x) * torch.sigmoid(self.gate(x))


class NestedBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mixer = Mixer()
        self.ffn = nn.ModuleDict({"mlp": BusyMLP()})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.mixer(x)
        return x + self.ffn["mlp"](x)


class Model(nn.Module):
    """Blocks in a ``ModuleList``, timing each whole forward as a ``step``."""

    def __init__(self, blocks: list[nn.Module]) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return timed("step", lambda: self._run(x))  # type: ignore[return-value]

    def _run(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def build(layout: str, layers: int = 2) -> tuple[nn.Module, torch.Tensor, float | None,
                                                 str | None]:
    """The model of ``layout``, its input, the attention seconds its steps are designed to
    spend (``None``: tensor work, whose time is measured) and the pattern it needs."""
    torch.manual_seed(0)
    x = torch.randn(1, 8, DIM)
    blocks: list[nn.Module]
    if layout == "alternating":
        weight, calls = torch.randn(160, 160), [0]
        blocks = [Block(AlternatingAttention(i, calls, weight), nn.Identity())
                  for i in range(layers)]
        return Counting(Model(blocks), calls).eval(), x, None, None
    if layout == "tensor":
        weight = torch.randn(160, 160)
        blocks = [Block(MatmulAttention(weight), BusyMLP(weight)) for _ in range(layers)]
        return Model(blocks).eval(), x, None, None
    if layout == "nested":
        return Model([NestedBlock() for _ in range(layers)]).eval(), x, layers * ATTENTION_S, None
    if layout == "per-head loop":
        blocks = [Block(PerHeadAttention(), BusyMLP()) for _ in range(layers)]
        return Model(blocks).eval(), x, layers * ATTENTION_S, "PerHeadAttention"
    blocks = [Block(BusyAttention(), BusyMLP(), last=layout == "attention last")
              for _ in range(layers)]
    return Model(blocks).eval(), x, layers * ATTENTION_S, None


def attention_beyond_busy_s(designed_s: float) -> list[float]:
    """Per timed step, the seconds its attention took beyond its designed busy work: the
    projections' and SDPA's tensor work (and the profiler's cost on each op while traced).
    Negligible on a fast machine; a slower or busier one makes it a few points of the
    step, all of it on attention's side, so the designed share is a lower bound that this
    extra may exceed."""
    out = []
    for _, t0, t1 in (c for c in CALLS if c[0] == "step"):
        inside = sum(b - a for what, a, b in CALLS if what == "attention" and t0 <= a and b <= t1)
        out.append(max(inside - designed_s, 0.0))
    return out


def measured_shares(steps: int) -> list[float]:
    """The attention share of each of the last ``steps`` timed steps, as the model measured
    itself (perf_counter around its own forwards)."""
    spans = [(t0, t1) for what, t0, t1 in CALLS if what == "step"][-steps:]
    shares = []
    for t0, t1 in spans:
        inside = sum(b - a for what, a, b in CALLS if what == "attention" and t0 <= a and b <= t1)
        shares.append(inside / (t1 - t0))
    return shares
