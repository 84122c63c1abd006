"""CUDA-only checks of the model attribution (skipped without a CUDA device): shares of the
kernels' time, parts adding up to the step, self- and cross-attention apart."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from attnprof.record.model import ModelSettings
from attnprof.run.model import profile_model
from attnprof.workload.settings import TimingPlan

pytestmark = pytest.mark.gpu

QUICK = ModelSettings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.05, min_samples=3,
                                      max_samples=10, min_warmup_calls=1, rounds=2),
                      trace_steps=3)


def test_a_decoder_on_cuda_is_attributed_by_kernel_time() -> None:
    torch.manual_seed(0)
    model = nn.TransformerDecoder(nn.TransformerDecoderLayer(256, 4, 1024, batch_first=True),
                                  2).cuda().eval()
    inputs = (torch.randn(2, 128, 256, device="cuda"), torch.randn(2, 96, 256, device="cuda"))
    record = profile_model(model, inputs, settings=QUICK)
    run = record.runs[0]
    att = run.attribution
    assert run.status == "ok" and att is not None, run.reason
    assert att.time_basis == "device" and att.total_device_us and att.total_device_us > 0
    assert math.fsum(p.device_us or 0.0 for p in att.parts) == pytest.approx(
        att.total_device_us, rel=1e-9)
    assert att.attention_share is not None and 0 < att.attention_share < 1
    assert {k.name for k in att.kinds} == {"self_attention", "cross_attention"}
    for layer in att.layers:
        assert layer.device_us is not None
        assert math.fsum(c.device_us or 0.0 for c in layer.components) == pytest.approx(
            layer.device_us, rel=1e-9)
        assert {k.name for k in layer.kinds} == {"self_attention", "cross_attention"}
    assert sum(a.kind == "cross" for a in record.attention) == 2
