"""Every registered variant, on every mode: ok within tolerance, or a stated refusal.

Parametrized over the registry, so a new variant is tested the moment it is registered.
"""

from __future__ import annotations

import pytest

from attnprof.errors import UsageError
from attnprof.run.compare import compare
from attnprof.variants import REGISTRY, get_variant, resolve_variants
from attnprof.workload.problem import Workload

TINY = Workload(batch=1, heads=4, seq=64, head_dim=16, window=16)

# What this CPU cannot run, and the words the reason must contain.
CPU_REFUSALS = {
    "sdpa-efficient": "runs only on CUDA",
    "sdpa-cudnn": "runs only on CUDA",
}
CPU_REFUSALS_BACKWARD = {"flex": "does not support backward on CPU",
                         "flex-eager": "does not support backward on CPU"}


@pytest.mark.parametrize("mode", ["forward", "forward+backward", "decode"])
@pytest.mark.parametrize("name", list(REGISTRY))
def test_variant_runs_or_says_why(name: str, mode: str, fast_settings) -> None:
    w = TINY.replace(mode=mode, kv_heads=2)
    record = compare(w, [name], settings=fast_settings)
    (row,) = record.results
    refusals = {**CPU_REFUSALS, **(CPU_REFUSALS_BACKWARD if mode == "forward+backward" else {})}
    if name in refusals:
        assert row.status == "unsupported", row.reason
        assert refusals[name] in row.reason
        return
    assert row.status == "ok", row.reason
    assert row.within_tolerance, (row.max_abs_error, row.tolerance)
    assert row.latency_ms is not None and row.latency_ms.count == len(row.latency_ms.samples) >= 3
    assert row.peak_memory_bytes is not None and row.peak_memory_bytes > 0
    assert row.flops and row.flops > 0 and row.tflops_per_s and row.tflops_per_s > 0


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", ["naive", "sdpa", "sdpa-math", "gqa-repeat-kv", "mha-module"])
def test_16_bit_outputs_are_within_their_tolerance(name: str, dtype: str,
                                                   fast_settings) -> None:
    record = compare(TINY.replace(dtype=dtype), [name], settings=fast_settings)
    (row,) = record.results
    assert row.status == "ok", row.reason
    assert row.within_tolerance, (row.max_abs_error, row.tolerance)
    assert row.max_abs_error > 0  # 16-bit arithmetic really is inexact


def test_sdpa_backend_is_read_from_the_ops(fast_settings) -> None:
    record = compare(TINY, ["sdpa-math", "sdpa-flash", "naive"], settings=fast_settings)
    assert record.result("sdpa-math").sdpa_backend == "math"
    assert record.result("sdpa-flash").sdpa_backend == "flash (CPU)"
    assert record.result("naive").sdpa_backend is None


def test_flex_reports_compile_time_apart_from_latency(fast_settings) -> None:
    record = compare(TINY, ["flex", "flex-eager"], settings=fast_settings)
    flex, eager = record.result("flex"), record.result("flex-eager")
    assert flex.status == eager.status == "ok"
    assert flex.compile_time_s is not None and flex.compile_time_s > 0
    assert flex.compile_time_s * 1e3 > flex.latency_ms.median
    assert eager.compile_time_s is None
    # PyTorch warns about uncompiled flex only once per process; the note is always there.
    assert any("not compiled" in n for n in eager.notes)


def test_sliding_window_is_checked_against_a_windowed_reference(fast_settings) -> None:
    record = compare(TINY, ["sliding-window", "sdpa"], settings=fast_settings)
    window, full = record.result("sliding-window"), record.result("sdpa")
    assert window.within_tolerance and full.within_tolerance
    assert window.flops < full.flops  # fewer admitted pairs


def test_user_variant_from_a_file(user_file, fast_settings) -> None:
    spec = f"{user_file}:my_attention"
    record = compare(TINY.replace(kv_heads=2), [spec], settings=fast_settings)
    (row,) = record.results
    assert (row.variant, row.family, row.status) == (spec, "user", "ok")
    assert row.within_tolerance


def test_user_variant_from_a_module_path(fast_settings) -> None:
    spec = "torch.nn.functional:scaled_dot_product_attention"
    (row,) = compare(TINY, [spec], settings=fast_settings).results
    assert row.status == "ok" and row.within_tolerance


def test_a_failing_or_wrong_user_variant_does_not_stop_the_run(user_file,
                                                               fast_settings) -> None:
    names = [f"{user_file}:broken", f"{user_file}:wrong", "sdpa"]
    broken, wrong, sdpa = compare(TINY, names, settings=fast_settings).results
    assert broken.status == "error" and broken.reason == "ValueError: user bug"
    assert wrong.status == "wrong" and wrong.within_tolerance is False
    assert sdpa.status == "ok"


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("does/not/exist.py:f", "does not exist"),
        ("no_such_module_xyz:f", "cannot import module"),
        ("torch.nn.functional:no_such_fn", "has no attribute"),
        ("torch:__version__", "is not callable"),
        ("flash", "unknown variant 'flash'"),
    ],
)
def test_bad_variant_names_are_usage_errors(spec: str, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        get_variant(spec)


def test_resolve_keeps_order_and_drops_duplicates() -> None:
    names = [v.name for v in resolve_variants(["sdpa", "naive", "sdpa"])]
    assert names == ["sdpa", "naive"]
    assert [v.name for v in resolve_variants(None)] == list(REGISTRY)


def test_every_variant_has_a_family_and_summary() -> None:
    for v in REGISTRY.values():
        assert v.family and v.summary and v.name == v.name.lower()
