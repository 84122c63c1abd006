"""No silent wrong numbers from a variant (issue 11, item 2).

Before: a user variant returning the wrong shape was ``ok`` at 6132% of the matmul ceiling;
one that wrote into ``q`` corrupted the accuracy of every variant measured after it;
``sys.exit(0)`` inside a variant ended attnprof with status 0 and nothing written. Now the
first is an ``error`` row naming both shapes, the second an ``error`` row naming the variant
and the tensor (the others measured on intact inputs), the third an ``error`` row — inline
and in the process executor's worker.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.run.compare import compare
from attnprof.run.executors.process import ProcessExecutor
from attnprof.workload.settings import Settings

TINY = {"batch": 1, "heads": 2, "kv_heads": 1, "seq": 32, "head_dim": 16, "device": "cpu"}

MISBEHAVING = '''
import sys

import torch.nn.functional as F

CALLS = []


def fine(q, k, v, **kwargs):
    return F.scaled_dot_product_attention(q, k, v, **kwargs)


def one_query(q, k, v, **kwargs):
    return fine(q, k, v, **kwargs)[:, :, :1]


def in_float64(q, k, v, **kwargs):
    return fine(q, k, v, **kwargs).double()


def a_tuple(q, k, v, **kwargs):
    return fine(q, k, v, **kwargs), None


def scales_q(q, k, v, **kwargs):
    out = fine(q, k, v, **kwargs)
    q.mul_(2)
    return out


def scales_v_later(q, k, v, **kwargs):
    # Well-behaved while it is built and warmed up (2 calls), then writes into v once,
    # during its first timing round.
    CALLS.append(1)
    if len(CALLS) == 4:
        v.add_(1)
    return fine(q, k, v, **kwargs)


def exits(q, k, v, **kwargs):
    sys.exit(0)
'''


@pytest.fixture
def misbehaving(tmp_path: Path) -> Path:
    path = tmp_path / "misbehaving.py"
    path.write_text(MISBEHAVING)
    return path


@pytest.mark.parametrize(("name", "says"), [
    ("one_query", "returned shape [1, 2, 1, 16] float32 on cpu, but the reference output is "
                  "[1, 2, 32, 16] float32"),
    ("in_float64", "returned shape [1, 2, 32, 16] float64 on cpu, but the reference output is "
                   "[1, 2, 32, 16] float32"),
    ("a_tuple", "returned tuple, not a tensor"),
])
def test_a_wrong_output_is_an_error_naming_both(name: str, says: str, misbehaving: Path,
                                                fast_settings: Settings) -> None:
    ok, wrong = compare(variants=["sdpa", f"{misbehaving}:{name}"], settings=fast_settings,
                        **TINY).results
    assert ok.status == "ok"
    assert wrong.status == "error" and says in wrong.reason
    assert wrong.latency_ms is None and wrong.flops_of_ceiling is None


@pytest.mark.parametrize(("name", "tensor", "phase"), [
    ("scales_q", "q", "building and warming up"),
    ("scales_v_later", "v", "timing, round 1"),
])
def test_a_variant_that_changes_its_inputs_is_named_and_the_others_are_not_hurt(
        name: str, tensor: str, phase: str, misbehaving: Path,
        fast_settings: Settings) -> None:
    variants = ["naive", f"{misbehaving}:{name}", "sdpa", "naive-inplace"]
    record = compare(variants=variants, settings=fast_settings, **TINY)
    rows = {r.variant: r for r in record.results}
    bad = rows[f"{misbehaving}:{name}"]
    assert bad.status == "error"
    assert f"changed its input {tensor} in place while {phase}" in bad.reason
    for other in ("naive", "sdpa", "naive-inplace"):  # before and after it: exact as ever
        assert rows[other].status == "ok" and rows[other].within_tolerance, rows[other]
        assert rows[other].max_abs_error is not None and rows[other].max_abs_error < 1e-5


def test_sys_exit_in_a_variant_is_its_error_inline(misbehaving: Path,
                                                   fast_settings: Settings) -> None:
    record = compare(variants=["naive", f"{misbehaving}:exits", "sdpa"],
                     settings=fast_settings, **TINY)
    naive, exited, sdpa = record.results
    assert exited.status == "error" and "called sys.exit(0)" in exited.reason
    assert naive.status == sdpa.status == "ok" and record.status == "complete"


def test_sys_exit_in_a_variant_is_its_error_in_a_worker(misbehaving: Path,
                                                        fast_settings: Settings) -> None:
    record = compare(variants=[f"{misbehaving}:exits", "sdpa"], settings=fast_settings,
                     executor=ProcessExecutor(), **TINY)
    exited, sdpa = record.results
    assert exited.status == "error" and "called sys.exit(0)" in exited.reason
    assert sdpa.status == "ok"


def test_sys_exit_in_a_variant_does_not_end_attnprof(misbehaving: Path,
                                                     tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    result = subprocess.run(
        [sys.executable, "-m", "attnprof", "compare", "--batch", "1", "--heads", "2",
         "--seq", "32", "--head-dim", "16", "--min-time", "0.01", "--variants",
         f"naive,{misbehaving}:exits", "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 3, result.stderr  # finished, every row kept; one erred
    rows = json.loads(out.read_text())["results"]
    assert [r["status"] for r in rows] == ["ok", "error"]
    assert "SystemExit" in rows[1]["reason"] and "attnprof compare" in result.stdout


def test_sys_exit_while_importing_a_variant_file_is_a_usage_error(tmp_path: Path) -> None:
    from attnprof.errors import UsageError
    from attnprof.variants import resolve_variants

    path = tmp_path / "quits.py"
    path.write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(UsageError, match=r"importing .* failed with SystemExit: 3"):
        resolve_variants([f"{path}:attention"])
