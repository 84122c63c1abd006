"""A user function that ignores ``enable_gqa``, run for real on grouped and ungrouped K/V.

``examples/attention/ignores_gqa.py`` computes ``q @ k.transpose(-2, -1)`` straight away, so
with 8 query heads sharing 2 K/V heads PyTorch raises its bare broadcast error; the row's
reason must say what happened (the head counts) and what to do.
"""

from __future__ import annotations

from pathlib import Path

from attnprof.run.compare import compare
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "attention" / "ignores_gqa.py"
SPEC = f"{EXAMPLE}:attention"
GROUPED = Workload(batch=1, heads=8, kv_heads=2, seq=32, head_dim=16)


def test_grouped_kv_failure_says_what_happened_and_the_fix(fast_settings: Settings) -> None:
    (row,) = compare(GROUPED, [SPEC], settings=fast_settings).results
    assert row.status == "unsupported", row.reason
    assert row.reason is not None
    assert "it received K/V with 2 heads for 8 query heads" in row.reason
    assert "pass --kv-heads 8 (equal to --heads), or honour enable_gqa=True" in row.reason
    # PyTorch's own words stay in the reason, after the explanation.
    assert "must match the size of tensor b (2)" in row.reason


def test_the_same_function_runs_with_one_kv_head_per_query_head(
        fast_settings: Settings) -> None:
    (row,) = compare(GROUPED.replace(kv_heads=8), [SPEC], settings=fast_settings).results
    assert row.status == "ok" and row.within_tolerance, row.reason


def test_a_user_bug_is_still_an_error_on_grouped_kv(tmp_path: Path,
                                                    fast_settings: Settings) -> None:
    path = tmp_path / "buggy.py"
    path.write_text("def attention(q, k, v, **kwargs):\n    raise ValueError('user bug')\n")
    (row,) = compare(GROUPED, [f"{path}:attention"], settings=fast_settings).results
    assert row.status == "error" and row.reason == "ValueError: user bug"
