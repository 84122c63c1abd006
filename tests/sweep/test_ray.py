"""The Ray executor, against the suite's local Ray instance (CPU only): the same
points, statuses, threads and peak memory as the local process executor, a segfault
included, with each point's node and environment recorded; a point whose task dies is
reported once, not retried."""

from __future__ import annotations

from pathlib import Path

import pytest
from ceiling_search import CEILING_BASE, CEILING_SEARCH

from attnprof.cli.main import main
from attnprof.record.limits import Ceiling
from attnprof.record.sweep import SweepRecord
from attnprof.run.executors.inline import InlineExecutor
from attnprof.run.sweep import plan_sweep, run_sweep
from attnprof.workload.grid import Axis, Grid
from attnprof.workload.settings import Settings

ray = pytest.importorskip("ray")


def test_an_unreachable_cluster_is_a_usage_error_naming_where_the_address_came_from(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from attnprof.errors import UsageError
    from attnprof.run.executors.ray import RayExecutor

    with pytest.raises(UsageError, match=r"^--ray-address 127\.0\.0\.1:1: cannot connect to a"):
        RayExecutor(address="127.0.0.1:1")._connect()
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    with pytest.raises(UsageError, match=r"^RAY_ADDRESS 127\.0\.0\.1:1: cannot connect to a"):
        RayExecutor()._connect()


def test_ray_runs_the_same_points_with_the_same_statuses(
        local_ray: None, failing: Path, tiny: dict[str, int], fast: Settings,
        tmp_path: Path) -> None:
    variants = ["sdpa", "naive", f"{failing}:segv_at_32", f"{failing}:oom_always"]
    # What does not depend on the clock, measured here: the inline executor gives the rows
    # the process executor gives (tests/run/test_executors.py), and the failing variants'
    # statuses in local workers are tests/sweep/test_isolation.py's.
    # One thread a point, the CPU default, as the CLI run below: each task still reserves
    # the fixture's two CPU slots (a point on every thread), so the points run one at a
    # time and the second infers the first's out-of-memory, as a local run does.
    grid = Grid(axes=[Axis(field="seq", values=[16, 32])])
    plan, _ = plan_sweep(grid, ["sdpa", "naive"], fast.replace(threads=1), "cpu", **tiny)
    local = run_sweep(plan, InlineExecutor())

    path = tmp_path / "ray.json"
    argv = ["sweep", "--seq", "16,32", "--batch", "1", "--heads", "2", "--head-dim", "16",
            "--variants", ",".join(variants), "--min-time", "0.01", "--rounds", "2",
            "--executor", "ray", "--worker-memory", "1GiB", "--json", str(path)]
    assert main(argv) == 3  # a row crashed: the exit status says so
    remote = SweepRecord.load(path)
    assert remote.executor == "ray" and remote.status == "complete"
    # The same points (the CLI's settings differ from the library's only in the timing
    # plan and ceilings), each with every variant's row in order.
    assert [(p.index, p.coords, p.workload) for p in remote.ordered_points()] == \
        [(p.index, p.coords, p.workload) for p in local.ordered_points()]
    assert [[r.variant for r in p.results] for p in remote.ordered_points()] == [variants] * 2
    statuses = [[r.status for r in p.results] for p in remote.ordered_points()]
    assert statuses == [["ok", "ok", "ok", "oom"], ["ok", "ok", "crashed", "skipped"]]
    crashed = remote.ordered_points()[1].result(f"{failing}:segv_at_32")
    assert crashed is not None and "SIGSEGV" in crashed.reason
    node = ray.get_runtime_context().get_node_id()
    for point in remote.points:
        assert point.node == node and point.environment is not None
        assert point.ceilings is not None  # each node measures its own
    # Each point had the threads a local run has (the sweep's, one), and what does not
    # depend on the clock agrees with the local run's.
    for here, there in zip(local.ordered_points(), remote.ordered_points(), strict=True):
        assert here.environment is not None and there.environment is not None
        assert there.environment.threads == here.environment.threads == 1
        for name in ("sdpa", "naive"):
            mine, theirs = here.result(name), there.result(name)
            assert mine is not None and theirs is not None
            assert theirs.peak_memory_bytes == mine.peak_memory_bytes
            assert theirs.ops == mine.ops and theirs.max_abs_error == mine.max_abs_error


KILLER = '''
import os
import signal
import time


def kills_its_ray_worker(q, k, v, **kwargs):
    with open({runs!r}, "a") as fh:
        fh.write("ran\\n")
    os.kill(os.getppid(), signal.SIGKILL)  # the Ray worker running this point's task
    time.sleep(60)
'''


def test_a_point_whose_task_dies_is_reported_once_not_retried(
        local_ray: None, tiny: dict[str, int], fast: Settings, tmp_path: Path) -> None:
    from attnprof.record.sweep import needs_rerun
    from attnprof.run.executors.ray import RayExecutor

    runs = tmp_path / "runs.txt"
    source = tmp_path / "killer.py"
    source.write_text(KILLER.format(runs=str(runs)))
    grid = Grid(axes=[Axis(field="seq", values=[16])])
    plan, _ = plan_sweep(grid, [f"{source}:kills_its_ray_worker"], fast, "cpu", **tiny)
    record = run_sweep(plan, RayExecutor(timeout_s=120, idle_timeout_s=None))
    (row,) = record.ordered_points()[0].results
    assert row.status == "crashed" and "the Ray task was lost (not retried)" in row.reason
    assert runs.read_text() == "ran\n"  # once: Ray did not run the point again
    assert needs_rerun(row)  # --resume runs it again, as a killed worker's point


def test_limits_on_ray_finds_what_the_local_workers_find(local_ray: None,
                                                         naive_ceiling: Ceiling) -> None:
    # The executor is the request's: the same capped probes as Ray tasks.
    from attnprof.run.limits import find_ceiling
    from attnprof.variants import get_variant

    found = find_ceiling(CEILING_BASE, get_variant("naive"), **CEILING_SEARCH, executor="ray")
    assert found.largest is not None
    assert found.largest == naive_ceiling.largest
    assert [p.size for p in found.probes] == [p.size for p in naive_ceiling.probes]
