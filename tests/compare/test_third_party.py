"""Third-party kernels (flash-attn, xformers, FlashInfer): registered, imported only when
built, and ``unsupported`` with the package and its pip command where missing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from attnprof.run.compare import compare
from attnprof.variants.third_party import PIP, THIRD_PARTY
from attnprof.workload.problem import Workload

NAMES = [v.name for v in THIRD_PARTY]
MODULE = {"flash-attn": "flash_attn", "flash-attn-varlen": "flash_attn",
          "xformers": "xformers", "flashinfer": "flashinfer"}


def test_every_kernel_the_issue_names_is_registered() -> None:
    assert NAMES == ["flash-attn", "flash-attn-varlen", "xformers", "flashinfer"]


@pytest.mark.parametrize("name", NAMES)
def test_a_missing_package_or_gpu_is_a_refusal_with_the_reason(name: str,
                                                              fast_settings) -> None:
    w = Workload(batch=1, heads=4, kv_heads=2, seq=32, head_dim=16)
    (row,) = compare(w, [name], settings=fast_settings).results
    module = MODULE[name]
    if importlib.util.find_spec(module) is None:
        assert row.status == "unsupported"
        assert row.reason == f"{module} is not installed; {PIP[module]} (needs CUDA)"
    else:  # installed, but this CPU run cannot use a CUDA kernel
        assert row.status == "unsupported" and "runs only on CUDA" in row.reason


def test_start_up_imports_no_third_party_package() -> None:
    probe = ("import sys, attnprof.variants, attnprof.cli.main\n"
             "print(sorted(m for m in ('flash_attn', 'xformers', 'flashinfer', 'torch') "
             "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"
