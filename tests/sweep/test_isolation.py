"""A sweep's points are isolated: running out of memory, a segfault and a hang become the
status of that point and variant, the sweep goes on, and a variant that ran out of memory
is inferred out of memory at every larger point instead of being run."""

from __future__ import annotations

from pathlib import Path

from attnprof.record.sweep import SweepRecord
from attnprof.run.executors.process import PREPARE_S, ProcessExecutor
from attnprof.run.sweep import plan_sweep, run_sweep
from attnprof.workload.grid import Axis, Grid
from attnprof.workload.settings import Settings

TIMEOUT_S = 6.0


def _statuses(record: SweepRecord) -> list[dict[str, str]]:
    return [{r.variant.rpartition(":")[2]: r.status for r in p.results}
            for p in record.ordered_points()]


def test_oom_crash_and_hang_are_statuses_and_the_sweep_goes_on(
        failing: Path, tiny: dict[str, int], fast: Settings) -> None:
    variants = ["sdpa", f"{failing}:segv_at_32", f"{failing}:hang_at_64",
                f"{failing}:oom_from_32", f"{failing}:oom_always"]
    grid = Grid(axes=[Axis(field="seq", values=[16, 32, 64, 128])])
    plan, _ = plan_sweep(grid, variants, fast, "cpu", **tiny)
    saved: list[int] = []
    executor = ProcessExecutor(timeout_s=TIMEOUT_S, idle_timeout_s=None,
                               memory_limit_bytes=1 << 30)
    record = run_sweep(plan, executor, on_point=lambda r: saved.append(len(r.points)))
    assert _statuses(record) == [
        {"sdpa": "ok", "segv_at_32": "ok", "hang_at_64": "ok", "oom_from_32": "ok",
         "oom_always": "oom"},
        {"sdpa": "ok", "segv_at_32": "crashed", "hang_at_64": "ok", "oom_from_32": "oom",
         "oom_always": "skipped"},
        {"sdpa": "ok", "segv_at_32": "ok", "hang_at_64": "timeout", "oom_from_32": "skipped",
         "oom_always": "skipped"},
        {"sdpa": "ok", "segv_at_32": "ok", "hang_at_64": "ok", "oom_from_32": "skipped",
         "oom_always": "skipped"},
    ]
    assert record.status == "complete"
    assert saved == [1, 2, 3, 4, 4]  # saved after every point, then with the fits
    p16, p32, p64, _ = record.ordered_points()
    crashed = p32.result(f"{failing}:segv_at_32")
    assert crashed is not None and "SIGSEGV" in crashed.reason
    oom = p32.result(f"{failing}:oom_from_32")
    assert oom is not None and "allocate" in oom.reason
    hung = p64.result(f"{failing}:hang_at_64")
    assert hung is not None and f"ran past the {TIMEOUT_S:g} s time limit" in hung.reason
    # The hung worker was stopped by the point's limit, which starts with its first variant
    # (start-up and attnprof's own steps get PREPARE_S beside it), not left to hang; then
    # the rest of the point ran in a fresh worker.
    assert p64.elapsed_s < TIMEOUT_S + PREPARE_S
    # Inferred, with the point that implied it — also when the very first point failed.
    assert p64.inferred == {f"{failing}:oom_from_32": 1, f"{failing}:oom_always": 0}
    skipped = p64.result(f"{failing}:oom_always")
    assert skipped is not None and "point #0 (seq=16)" in skipped.reason
    assert p16.node and p16.environment is not None
    # Fits use only the points that ran.
    fit = record.fit("sdpa", "peak_memory_bytes", "seq")
    assert fit is not None and fit.points == 4


def test_shapes_that_cannot_fit_are_oom_without_running(fast: Settings) -> None:
    from attnprof.run.executors.inline import InlineExecutor

    grid = Grid(axes=[Axis(field="batch", values=[1, 1 << 30])])
    plan, _ = plan_sweep(grid, ["sdpa"], fast, "cpu", seq=16, heads=2, head_dim=16)
    small, big = run_sweep(plan, InlineExecutor()).ordered_points()
    assert small.results[0].status == "ok"
    assert big.results[0].status == "oom" and "q/k/v/output alone" in big.results[0].reason


def test_a_variant_out_of_memory_leaves_the_others_a_clean_worker(
        failing: Path, tiny: dict[str, int], fast: Settings) -> None:
    # The hoarder keeps what it allocated when it runs out of its worker's memory: in that
    # worker nothing else could allocate. The worker is replaced after the OOM, so the
    # others run clean, and only the hoarder is inferred out of memory at the larger point.
    hoarder = f"{failing}:hoards_then_oom"
    grid = Grid(axes=[Axis(field="seq", values=[512, 1024])])  # naive: 2 and 8 MiB scores
    plan, _ = plan_sweep(grid, [hoarder, "sdpa", "naive"],
                         fast.replace(cpu_allocator="system"), "cpu", **tiny)
    executor = ProcessExecutor(timeout_s=120, idle_timeout_s=None, memory_limit_bytes=256 << 20)
    record = run_sweep(plan, executor)
    assert _statuses(record) == [
        {"hoards_then_oom": "oom", "sdpa": "ok", "naive": "ok"},
        {"hoards_then_oom": "skipped", "sdpa": "ok", "naive": "ok"}]
    first, second = record.ordered_points()
    assert second.inferred == {hoarder: 0}
    for point in (first, second):
        for name in ("sdpa", "naive"):
            row = point.result(name)
            assert row is not None and row.within_tolerance and row.latency_ms is not None
