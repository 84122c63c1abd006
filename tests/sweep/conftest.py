"""Fixtures for the sweep tests: tiny shapes, few samples, and user variants that fail on
purpose at chosen sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from ceiling_search import CEILING_BASE, CEILING_SEARCH

from attnprof.record.limits import Ceiling
from attnprof.workload.settings import Settings, TimingPlan

#: A tiny shape: every point of a sweep over it takes milliseconds to measure, so a sweep's
#: time is its workers' start-up.
TINY = {"batch": 1, "heads": 2, "head_dim": 16}
FAST = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3, max_samples=5,
                                min_warmup_calls=1, rounds=2),
                measure_ceilings=False)

FAILING = '''
import ctypes
import os
import time

import torch
import torch.nn.functional as F


def _sdpa(q, k, v, **kwargs):
    return F.scaled_dot_product_attention(q, k, v, **kwargs)


def segv_at_32(q, k, v, **kwargs):
    if q.shape[2] == 32:
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    return _sdpa(q, k, v, **kwargs)


def hang_at_64(q, k, v, **kwargs):
    if q.shape[2] == 64:
        time.sleep(3600)
    return _sdpa(q, k, v, **kwargs)


def hangs_at_32_while_asked(q, k, v, **kwargs):
    if q.shape[2] == 32 and os.environ.get("ATTNPROF_TEST_HANG"):
        time.sleep(3600)
    return _sdpa(q, k, v, **kwargs)


def oom_from_32(q, k, v, **kwargs):
    if q.shape[2] >= 32:
        torch.empty(1 << 36, dtype=torch.uint8)  # 64 GiB: beyond any worker's cap
    return _sdpa(q, k, v, **kwargs)


def oom_always(q, k, v, **kwargs):
    torch.empty(1 << 36, dtype=torch.uint8)
    return _sdpa(q, k, v, **kwargs)


_HOARD = []


def hoards_then_oom(q, k, v, **kwargs):
    # A leak: keeps every block it allocates until its worker's memory runs out (to the
    # last 2 MiB, so that the worker can still report).
    try:
        while True:
            _HOARD.append(torch.ones(8 << 20, dtype=torch.uint8))
    except RuntimeError:
        while True:
            _HOARD.append(torch.ones(2 << 20, dtype=torch.uint8))


def fast_but_wrong(q, k, v, **kwargs):
    return v[:, :, : q.shape[2]] * 0


def detached(q, k, v, **kwargs):
    return _sdpa(q.detach(), k.detach(), v.detach(), **kwargs)
'''


@pytest.fixture(scope="session")
def failing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user file whose variants segfault, hang or run out of memory at chosen sizes."""
    path = tmp_path_factory.mktemp("variants") / "failing.py"
    path.write_text(FAILING)
    return path


@pytest.fixture(scope="session")
def tiny() -> dict[str, int]:
    """Workload fields of :data:`TINY`."""
    return dict(TINY)


@pytest.fixture(scope="session")
def fast() -> Settings:
    """:data:`FAST`, the sweep tests' timing plan."""
    return FAST


@pytest.fixture(scope="session")
def naive_ceiling() -> Ceiling:
    """naive's ceiling of :data:`CEILING_SEARCH` found by local capped workers (the
    process executor): one search, which test_limits checks against compare and the Ray
    executor must repeat."""
    from attnprof.run.limits import find_ceiling
    from attnprof.variants import get_variant

    return find_ceiling(CEILING_BASE, get_variant("naive"), **CEILING_SEARCH)
