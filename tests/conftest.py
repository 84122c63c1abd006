"""Shared test configuration: the GPU marker, the public traces, small workloads."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Real torch.profiler traces shipped beside the repository (never copied into it).
PUBLIC_TRACES = REPO_ROOT.parent / "shared" / "traces" / "public"


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``@pytest.mark.gpu`` tests on machines without CUDA."""
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def public_traces() -> Path:
    """The public trace folder; skips the test cleanly when it is absent."""
    if not PUBLIC_TRACES.is_dir() or not any(PUBLIC_TRACES.glob("*.json.gz")):
        pytest.skip(f"public traces not found at {PUBLIC_TRACES}")
    return PUBLIC_TRACES
