"""Fixtures for the comparison tests: tiny workloads and a fast timing plan."""

from __future__ import annotations

import pytest

from attnprof.workload.settings import Settings, TimingPlan

#: Enough samples to exercise the statistics, few enough to keep the suite fast.
FAST = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3,
                                max_samples=5, min_warmup_calls=1),
                measure_ceilings=False)


@pytest.fixture(scope="session")
def fast_settings() -> Settings:
    return FAST


SDPA_LIKE_FILE = '''
import torch.nn.functional as F


def my_attention(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """An SDPA-compatible user implementation."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal,
                                          scale=scale, enable_gqa=enable_gqa)


def broken(q, k, v, **kwargs):
    raise ValueError("user bug")


def wrong(q, k, v, **kwargs):
    return v[:, :, : q.shape[2]] * 0
'''


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "my_attn.py"
    path.write_text(SDPA_LIKE_FILE)
    return path
