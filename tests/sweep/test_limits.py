"""Memory ceilings found by bisection on real runs in capped workers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from ceiling_search import CEILING_BASE, CEILING_SEARCH

from attnprof.cli.main import main
from attnprof.formatting import threads_text
from attnprof.record.limits import Ceiling
from attnprof.run.compare import compare
from attnprof.run.limits import analytic_ceiling, find_ceiling, probe_budget, search_range
from attnprof.variants import get_variant
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings, TimingPlan

GiB = 1 << 30
BASE = Workload(batch=1, heads=2, kv_heads=2, seq=1024, head_dim=16).validate()


def test_search_range_ends_where_the_step_output_alone_exceeds_the_budget() -> None:
    low, high, known = search_range(BASE, "seq", GiB, 1024, None)
    # The output (the inputs are the caller's): 1·2·S·16·4 B = 128·S bytes ≤ 1 GiB up to
    # S = 8 Mi.
    assert (low, known) == (1024, True) and high == 8 * 1024 * 1024 + 1024
    assert search_range(BASE, "seq", GiB, 1024, 8192) == (1024, 8192, False)
    assert probe_budget(1024, 8192, 1024) == math.ceil(math.log2(7)) + 2


def _peak(workload: Workload, variant: str) -> int:
    """The peak memory ``compare`` measures for ``variant`` at ``workload``."""
    settings = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.0, min_samples=1,
                                        max_samples=1, min_warmup_calls=1, rounds=1),
                        check_accuracy=False, measure_ceilings=False)
    (row,) = compare(workload, [variant], settings=settings).results
    assert row.status == "ok" and row.peak_memory_bytes is not None, row.reason
    return row.peak_memory_bytes


def test_a_ceiling_is_what_compare_measures_at_the_boundary(naive_ceiling: Ceiling) -> None:
    step, top, budget = (CEILING_SEARCH[k] for k in ("step", "maximum", "budget"))
    naive = naive_ceiling
    flash = find_ceiling(CEILING_BASE, get_variant("sdpa-flash"), **CEILING_SEARCH)
    assert naive.largest is not None and flash.largest is not None
    assert flash.largest > naive.largest and flash.first_failure is None  # fits to the top
    for c in (naive, flash):
        # Confirmed by a real measured run at the size found, within the probe budget.
        assert c.confirmed is not None and c.confirmed.status == "ok"
        assert c.confirmed.latency_ms is not None and c.confirmed.peak_memory_bytes
        assert c.probes[-1].size == c.largest and c.probes[-1].fits
        assert len(c.probes) <= probe_budget(step, top, step)
    # One definition of "fits": compare's peak at the ceiling is within the budget, and one
    # step above it (where limits saw naive not fit) it is not.
    assert naive.first_failure is not None and not naive.first_failure.fits
    assert naive.first_failure.size == naive.largest + step
    assert _peak(CEILING_BASE.replace(seq=naive.largest), "naive") <= budget
    assert _peak(CEILING_BASE.replace(seq=naive.largest + step), "naive") > budget
    # The textbook estimate (one score matrix) is too optimistic for naive: it says by how much.
    assert naive.analytic == analytic_ceiling(CEILING_BASE, get_variant("naive"), "seq",
                                              budget, step)
    assert naive.analytic_ratio is not None and naive.analytic_ratio > 1


def test_limits_command_refuses_bad_flags(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in (
            (["--variants", "naive", "--seq", "64"], "--seq is what limits searches"),
            (["--variants", "naive", "--memory-budget", "lots"], "--memory-budget 'lots'"),
            (["--variants", "naive", "--step", "0"], "--step must be a positive integer"),
            (["--variants", "nope"], "unknown variant 'nope'")):
        assert main(["limits", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and "\n" not in err


def test_limits_takes_its_executor_from_the_request(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Probes must end their own capped worker when they do not fit: the inline executor,
    # which would run them in this process, is refused in one line, before any run.
    from attnprof.errors import UsageError

    with pytest.raises(UsageError, match=r"capped worker.*--executor process"):
        find_ceiling(BASE, get_variant("naive"), "seq", GiB, step=256, maximum=512,
                     executor="inline")
    assert main(["limits", "--variants", "naive", "--max", "512", "--executor", "process",
                 "--ray-address", "127.0.0.1:1"]) == 2
    assert "--ray-address is for --executor ray" in capsys.readouterr().err


# A variant that fails unless it runs on the intra-op threads the environment names.
_THREADS_CHECK = """import os
import torch
import torch.nn.functional as F

def attn(q, k, v, **kw):
    wanted = int(os.environ["ATTNPROF_TEST_THREADS"])
    if torch.get_num_threads() != wanted:
        raise RuntimeError(f"ran on {torch.get_num_threads()} threads, not {wanted}")
    return F.scaled_dot_product_attention(q, k, v, **kw)
"""


@pytest.mark.parametrize("threads", ["1", "2"])
def test_limits_probes_and_confirms_on_the_threads_asked(
        threads: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Every probe and the confirming run are timed on the threads compare would use (one on
    # a CPU unless --threads says), in their worker: the variant refuses any other count.
    variant = tmp_path / "threads_check.py"
    variant.write_text(_THREADS_CHECK)
    monkeypatch.setenv("ATTNPROF_TEST_THREADS", threads)
    out = tmp_path / "limits.json"
    argv = ["limits", "--variants", f"{variant}:attn", "--batch", "1", "--heads", "2",
            "--head-dim", "16", "--step", "64", "--max", "128", "--memory-budget", "1GiB",
            "--min-time", "0.01", "--mode", "forward", "--json", str(out), "--no-store"]
    assert main(argv + ([] if threads == "1" else ["--threads", threads])) == 0
    record = json.loads(out.read_text())
    (ceiling,) = record["ceilings"]
    assert ceiling["largest"] == 128 and ceiling["confirmed"]["status"] == "ok", ceiling
    assert all(p["status"] == "ok" for p in ceiling["probes"])
    assert record["environment"]["threads"] == int(threads)
    shown = " ".join(capsys.readouterr().out.split())
    assert threads_text(int(threads), record["environment"]["cpus"]) in shown, shown


def test_limits_refuses_a_bad_thread_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["limits", "--variants", "naive", "--max", "128", "--threads", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--threads" in err and "got 0" in err and "\n" not in err
