"""Deterministic inputs for a workload, and the measured step for its mode.

Inputs are drawn from a seeded CPU generator and then moved to the device, so the same seed
gives the same numbers on every machine. The *step* is what one timed sample runs:

* ``forward``: ``call(q, k, v)`` (the runner disables autograd around it);
* ``forward+backward``: the call plus ``autograd.grad`` of a fixed upstream gradient into
  q, k and v (no ``.grad`` accumulation between samples);
* ``decode``: write one new token's K/V into the last slot of the cache, then attend the
  single query over the whole cache — one decode step at a fixed cache length.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnprof.workload.problem import Workload

if TYPE_CHECKING:
    import torch

    from attnprof.variants.base import AttentionCall


@dataclass
class Inputs:
    """q, k, v for one workload (k/v are the KV cache in decode mode)."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    grad_out: torch.Tensor | None = None
    k_new: torch.Tensor | None = None
    v_new: torch.Tensor | None = None


def make_inputs(workload: Workload, seed: int = 0) -> Inputs:
    """Seeded standard-normal q, k, v (plus upstream gradient or new token per mode)."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    dtype = getattr(torch, workload.dtype)

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, dtype=torch.float32).to(workload.device, dtype)

    b, h, hk, d = workload.batch, workload.heads, workload.num_kv_heads, workload.head_dim
    q_len, k_len = workload.q_len, workload.k_len
    q, k, v = draw(b, h, q_len, d), draw(b, hk, k_len, d), draw(b, hk, k_len, d)
    if workload.mode == "forward+backward":
        return Inputs(q.requires_grad_(), k.requires_grad_(), v.requires_grad_(),
                      grad_out=draw(b, h, workload.q_len, d))
    if workload.mode == "decode":
        k_new, v_new = draw(b, hk, 1, d), draw(b, hk, 1, d)
        # The step writes the new token into the last slot; do it once now so the
        # float64 reference sees exactly the cache the timed step attends over.
        k[:, :, -1:] = k_new
        v[:, :, -1:] = v_new
        return Inputs(q, k, v, k_new=k_new, v_new=v_new)
    return Inputs(q, k, v)


def make_step(call: AttentionCall, inputs: Inputs, mode: str) -> Callable[[], object]:
    """The zero-argument function one timed sample runs for ``mode``."""
    import torch

    q, k, v = inputs.q, inputs.k, inputs.v
    if mode == "forward+backward":
        grad_out = inputs.grad_out

        def train_step() -> object:
            out = call(q, k, v)
            return torch.autograd.grad(out, (q, k, v), grad_out)

        return train_step
    if mode == "decode":
        k_new, v_new = inputs.k_new, inputs.v_new
        assert k_new is not None and v_new is not None, "decode inputs carry the new token"

        def decode_step() -> object:
            k[:, :, -1:].copy_(k_new)
            v[:, :, -1:].copy_(v_new)
            return call(q, k, v)

        return decode_step
    return lambda: call(q, k, v)


def grad_mode(mode: str) -> contextlib.AbstractContextManager[object]:
    """Autograd on for training steps, off otherwise (inference has no graph to build)."""
    import torch

    return torch.enable_grad() if mode == "forward+backward" else torch.no_grad()
