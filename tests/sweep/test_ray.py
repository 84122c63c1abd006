"""The Ray executor, against a local Ray instance this module starts (CPU only): the same
points and statuses as the local process executor, a segfault included, with each point's
node and environment recorded."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.record.sweep import SweepRecord
from attnprof.run.executors.process import ProcessExecutor
from attnprof.run.sweep import plan_sweep, run_sweep
from attnprof.spec.grid import Axis, Grid
from attnprof.spec.settings import Settings

ray = pytest.importorskip("ray")


def test_an_unreachable_cluster_is_a_usage_error() -> None:
    from attnprof.errors import UsageError
    from attnprof.run.executors.ray import RayExecutor

    with pytest.raises(UsageError, match="cannot connect to a Ray cluster"):
        RayExecutor(address="127.0.0.1:1")._connect()


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    # One CPU slot: points run one at a time, as they would timed on a one-slot node. No
    # usage statistics: the test machine has no network to send them over.
    saved = os.environ.get("RAY_USAGE_STATS_ENABLED")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR)
    yield
    ray.shutdown()
    if saved is None:
        del os.environ["RAY_USAGE_STATS_ENABLED"]
    else:
        os.environ["RAY_USAGE_STATS_ENABLED"] = saved


def _outcome(record: SweepRecord) -> list[tuple[object, ...]]:
    return [(p.index, p.coords, p.workload, [(r.variant, r.status) for r in p.results])
            for p in record.ordered_points()]


def test_ray_runs_the_same_points_with_the_same_statuses(
        local_ray: None, failing: Path, tiny: dict[str, int], fast: Settings,
        tmp_path: Path) -> None:
    variants = ["sdpa", f"{failing}:segv_at_32", f"{failing}:oom_always"]
    grid = Grid(axes=[Axis(field="seq", values=[16, 32])])
    plan, _ = plan_sweep(grid, variants, fast, "cpu", **tiny)
    local = run_sweep(plan, ProcessExecutor(memory_limit_bytes=1 << 30))

    path = tmp_path / "ray.json"
    argv = ["sweep", "--seq", "16,32", "--batch", "1", "--heads", "2", "--head-dim", "16",
            "--variants", ",".join(variants), "--min-time", "0.01", "--rounds", "2",
            "--executor", "ray", "--worker-memory", "1GiB", "--json", str(path)]
    assert main(argv) == 0
    remote = SweepRecord.load(path)
    assert remote.executor == "ray" and remote.status == "complete"
    # The CLI's settings differ from the library's only in the timing plan and ceilings.
    assert [(i, c, [s for _, s in rows]) for i, c, _, rows in _outcome(remote)] == \
        [(i, c, [s for _, s in rows]) for i, c, _, rows in _outcome(local)]
    statuses = [[r.status for r in p.results] for p in remote.ordered_points()]
    assert statuses == [["ok", "ok", "oom"], ["ok", "crashed", "skipped"]]
    crashed = remote.ordered_points()[1].result(f"{failing}:segv_at_32")
    assert crashed is not None and "SIGSEGV" in crashed.reason
    node = ray.get_runtime_context().get_node_id()
    for point in remote.points:
        assert point.node == node and point.environment is not None
        assert point.ceilings is not None  # each node measures its own
