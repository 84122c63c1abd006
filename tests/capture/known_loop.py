"""A training loop whose costs are known: attention's forward and backward, and the MLP's,
each spend a set Python-level time inside a custom ``torch.autograd.Function``, and time
themselves into :data:`SPENT` (no profiler, no label), so a test compares what a capture
attributes with what the same step measured of itself.
"""

from __future__ import annotations

import time

import torch
from torch import nn

#: Seconds each part spends per call.
ATTENTION_FORWARD_S, ATTENTION_BACKWARD_S = 0.008, 0.012
MLP_FORWARD_S, MLP_BACKWARD_S = 0.006, 0.009
DIM = 16
#: What the current step spent, by part (``attention``, ``mlp``); the loop clears it.
SPENT: dict[str, float] = {}


def busy(part: str, seconds: float) -> None:
    """Python-level work of a known wall-clock duration, timed into :data:`SPENT`."""
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        pass
    SPENT[part] = SPENT.get(part, 0.0) + time.perf_counter() - t0


class AttentionWork(torch.autograd.Function):
    @staticmethod
    def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        busy("attention", ATTENTION_FORWARD_S)
        return x * 1.0

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        busy("attention", ATTENTION_BACKWARD_S)
        return grad * 1.0


class MLPWork(torch.autograd.Function):
    @staticmethod
    def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        busy("mlp", MLP_FORWARD_S)
        return x * 1.0

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        busy("mlp", MLP_BACKWARD_S)
        return grad * 1.0


class SlowAttention(nn.Module):
    """Hand-written attention (named to attnprof with ``attention_module``)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return AttentionWork.apply(x)  # type: ignore[no-any-return]


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(DIM, DIM)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return MLPWork.apply(self.fc(x))  # type: ignore[no-any-return]


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn, self.mlp = SlowAttention(), MLP()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(x)
        return x + self.mlp(x)


class KnownCostModel(nn.Module):
    def __init__(self, layers: int = 2) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Block() for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x
