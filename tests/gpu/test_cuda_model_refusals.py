"""CUDA-only check of the model command's refusals (skipped without a CUDA device). No
transformers needed: the H200 image has none, so the model is a plain module calling SDPA."""

from __future__ import annotations

import pytest

from attnprof.record.model import ModelSettings
from attnprof.run.model import profile_model
from attnprof.workload.settings import TimingPlan

pytestmark = pytest.mark.gpu

FAST = ModelSettings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.02, min_samples=2,
                                     max_samples=5, min_warmup_calls=1, rounds=1),
                     trace_steps=1)


def _attention_model() -> tuple[object, object]:
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, dim: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, d = x.shape
            q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).unbind(2)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            out = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(out.transpose(1, 2).reshape(b, s, d))

    torch.manual_seed(0)
    model = nn.Sequential(Attention(256, 4), Attention(256, 4)).cuda()
    return model, torch.randn(2, 128, 256, device="cuda")


def test_a_refused_backend_is_unsupported_in_model_as_in_compare() -> None:
    """fp32 on flash: PyTorch refuses with its reasons in warnings; the model row is
    ``unsupported`` with them, as compare's row is (one classification)."""
    model, inputs = _attention_model()
    record = profile_model(model, inputs, implementations=("sdpa-math", "sdpa-flash"),
                           settings=FAST)
    math, flash = record.run("sdpa-math", "prefill"), record.run("sdpa-flash", "prefill")
    assert math.status == "ok", math.reason
    assert math.peak_memory_method == "cuda-allocator-peak"
    # The module passes is_causal to SDPA itself: the call does not say, FLOPs uncounted.
    assert [c.q_len for c in math.calls] == [128, 128] and math.core_flops is None
    assert flash.status == "unsupported", flash.reason
    assert flash.reason.startswith("PyTorch refused: ") and "dtype" in flash.reason
