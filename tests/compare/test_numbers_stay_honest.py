"""Numbers that cannot be right are refused or flagged (issue 11, item 2).

* every numeric flag is finite and in range, or the command stops in one line (before:
  ``--min-time nan|inf`` could yield a "complete" record of ``error`` rows; seeds past
  2**64 and negative ones, windows past 64 bits reached torch);
* the matmul ceiling survives a busy machine: one slow call used to end its search at
  n=256 and report 0.002 TFLOP/s, so that variants read 1943% of it;
* a share of a ceiling above 100% is never shown silently.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable

import msgspec
import pytest

from attnprof.cli.main import main
from attnprof.errors import UsageError
from attnprof.measure.ceilings import _matmul, measure_ceilings
from attnprof.record.environment import Ceilings
from attnprof.run.compare import run_point
from attnprof.run.point import Point
from attnprof.run.processes import merge_processes
from attnprof.run.rows import CONTENDED_NOTE, contention_notes
from attnprof.workload.problem import Workload
from attnprof.workload.settings import CaptureSpec, Settings, TimingPlan

SMALL = ["--batch", "1", "--heads", "2", "--seq", "32", "--head-dim", "16",
         "--min-time", "0.01", "--variants", "naive"]
BIG = str(2**64)


@pytest.mark.parametrize(("args", "needle"), [
    (["--min-time", "nan"], "--min-time must be positive"),
    (["--min-time", "inf"], "--min-time must be positive"),
    (["--min-time", "-1"], "--min-time must be positive"),
    (["--variant-timeout", "nan"], "--variant-timeout must be positive"),
    (["--variant-timeout", "inf"], "--variant-timeout must be positive"),
    (["--variant-timeout", "-5"], "--variant-timeout must be positive"),
    (["--seed", "-1"], "--seed must be between 0 and 2**63-1, got -1"),
    (["--seed", BIG], f"--seed must be between 0 and 2**63-1, got {BIG}"),
    (["--seed", "nan"], "invalid int value: 'nan'"),
    (["--window", "0"], "--window must be a positive integer, got 0"),
    (["--window", BIG], f"--window must be below 2**63, got {BIG}"),
    (["--batch", BIG], f"--batch must be below 2**63, got {BIG}"),
    (["--rounds", BIG], f"--rounds must be below 2**63, got {BIG}"),
    (["--trace-steps", "0"], "--trace-steps must be a positive integer, got 0"),
    (["--trace-steps", BIG], "--trace-steps must be below 2**63"),
])
def test_numeric_flags_are_finite_and_in_range(args: list[str], needle: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", *SMALL, *args]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("attnprof: error: ") and needle in line, line


@pytest.mark.parametrize("settings", [
    Settings(plan=TimingPlan(min_time_s=math.nan)),
    Settings(plan=TimingPlan(warmup_s=math.inf)),
    Settings(plan=TimingPlan(min_warmup_calls=0)),
    Settings(variant_timeout_s=math.nan),
    Settings(trace=CaptureSpec(wait=-1)),
    Settings(seed=2**64),
])
def test_the_library_refuses_the_same_values(settings: Settings) -> None:
    with pytest.raises(UsageError):
        settings.validate()


def test_one_slow_call_does_not_end_the_ceiling_search() -> None:
    # A scripted machine: 90 GFLOP/s at n=256, whose first probe call was descheduled for
    # 50 ms; 100 at 512; 80 at 1024, where a call takes 27 ms: compute-bound.
    seen: list[tuple[int, int]] = []
    rates = {256: 90e9, 512: 100e9, 1024: 80e9}

    def time_calls(n: int, count: int) -> list[float]:
        seen.append((n, count))
        per_call = 2 * n**3 / rates[n]
        calls = [per_call] * count
        if n == 256 and len(seen) == 1:
            calls[0] = 0.05
        return calls

    n, rate = _matmul("cpu", None, time_calls)
    assert [size for size, _ in seen] == [256, 512, 1024, 1024]  # went on past 256
    assert n == 512 and rate == pytest.approx(100e9)  # the best rate seen, not the last


def test_a_share_above_the_ceiling_is_flagged_in_the_row_and_the_table() -> None:
    from attnprof.render.terminal import TerminalRenderer

    low = Ceilings(matmul_tflops_per_s=1e-9, bandwidth_gbytes_per_s=1e-6,
                   method="a ceiling measured on a very busy machine")
    point = Point(workload=Workload(batch=1, heads=2, seq=32, head_dim=16).validate(),
                  variants=("sdpa",), ceilings=low,
                  settings=Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01,
                                                    min_samples=3, max_samples=5,
                                                    min_warmup_calls=1)))
    record = run_point(point)
    (row,) = record.results
    assert row.flops_of_ceiling is not None and row.flops_of_ceiling > 1
    assert any("of the matmul ceiling is impossible" in note for note in row.notes)
    assert any("of the copy ceiling: the data stayed in the caches" in note
               for note in row.notes)
    text = TerminalRenderer(width=600).render(record)
    (line,) = [ln for ln in text.splitlines() if ln.startswith("│ sdpa ")]
    assert f"({row.flops_of_ceiling:.0%})!" in line  # the share itself is marked
    assert "impossible" in line


def test_a_variant_timed_while_other_processes_hold_the_cpus_says_so(
        busy_cpus: Callable[[], contextlib.AbstractContextManager[None]]) -> None:
    # Real contention: spinning processes on every CPU while the samples are taken. Their
    # IQR can look fine (every call waits alike); the run-queue wait tells.
    fixed = Ceilings(matmul_tflops_per_s=1.0, bandwidth_gbytes_per_s=10.0, method="fixed")
    point = Point(workload=Workload(batch=1, heads=2, seq=64, head_dim=16).validate(),
                  variants=("sdpa", "naive"), ceilings=fixed,
                  settings=Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.3,
                                                    min_warmup_calls=1)))
    with busy_cpus():
        record = run_point(point)
        ceilings = measure_ceilings("cpu", "float32")
    assert "measured while other processes held the CPUs" in ceilings.method
    for row in record.results:
        (note,) = [n for n in row.notes if n.startswith(CONTENDED_NOTE)]
        found = re.search(r"waited for a CPU (\d+)%", note)
        assert found is not None and float(found.group(1)) > 5, note
    # Merged over processes, each process's own contention note is kept, named.
    merged = merge_processes([record, record])
    assert sum(n.startswith("process 2: " + CONTENDED_NOTE) for n in merged.results[0].notes) == 1


def test_no_contention_note_below_the_threshold() -> None:
    assert contention_notes(None) == [] and contention_notes(0.04) == []
    (note,) = contention_notes(0.4)
    assert note.startswith(f"{CONTENDED_NOTE} 40% of their time")


def test_a_run_stopped_between_processes_is_partial() -> None:
    # The record is saved after each process; one stopped before its last planned process
    # (SIGTERM, Ctrl-C) must not read "complete", however complete each process was.
    point = Point(workload=Workload(batch=1, heads=2, seq=32, head_dim=16).validate(),
                  variants=("sdpa",), ceilings=Ceilings(matmul_tflops_per_s=1.0,
                                                        bandwidth_gbytes_per_s=10.0,
                                                        method="fixed"),
                  settings=Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01,
                                                    min_warmup_calls=1)))
    record = run_point(point)
    assert record.status == "complete"
    assert merge_processes([record, record], planned=3).status == "partial"
    assert merge_processes([record, record], planned=2).status == "complete"
    stopped = msgspec.structs.replace(record, status="partial")
    assert merge_processes([record, stopped], planned=2).status == "partial"
