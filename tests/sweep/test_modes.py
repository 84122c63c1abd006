"""Training and decode sweeps: forward+backward for every variant with a backward (and why
not for the others), training memory reported; decode over cache lengths with per-step
time and KV-cache bytes."""

from __future__ import annotations

from pathlib import Path

from attnprof.render import TerminalRenderer
from attnprof.run.executors.inline import InlineExecutor
from attnprof.run.sweep import plan_sweep, run_sweep
from attnprof.workload import costs
from attnprof.workload.grid import Axis, Grid
from attnprof.workload.settings import Settings


def test_forward_and_training_in_one_sweep(failing: Path, tiny: dict[str, int],
                                           fast: Settings) -> None:
    grid = Grid(axes=[Axis(field="mode", values=["forward", "forward+backward"]),
                      Axis(field="seq", values=[32, 64])])
    variants = ["naive", "sdpa-flash", "flex-eager", f"{failing}:detached"]
    plan, _ = plan_sweep(grid, variants, fast, "cpu", **tiny)
    record = run_sweep(plan, InlineExecutor())
    for point in record.ordered_points():
        rows = {r.variant: r for r in point.results}
        training = point.coords["mode"] == "forward+backward"
        for name in ("naive", "sdpa-flash"):
            assert rows[name].status == "ok" and rows[name].peak_memory_bytes
        if training:
            assert rows["flex-eager"].status == "unsupported"
            assert "backward" in rows["flex-eager"].reason
            detached = rows[f"{failing}:detached"]
            assert detached.status == "unsupported" and "no backward" in detached.reason
            assert "--mode forward" in detached.reason
        else:
            assert rows[f"{failing}:detached"].status == "ok"
    # Training holds more than inference at the same shape (saved activations, gradients).
    by = {(p.coords["mode"], p.coords["seq"]): p for p in record.points}
    for seq in (32, 64):
        fwd = by[("forward", seq)].result("naive")
        train = by[("forward+backward", seq)].result("naive")
        assert fwd is not None and train is not None
        assert train.peak_memory_bytes > fwd.peak_memory_bytes  # type: ignore[operator]
    # One fit per mode: the groups keep forward and training apart.
    groups = {tuple(f.group.items()) for f in record.fits if f.variant == "naive"}
    assert groups == {(("mode", "forward"),), (("mode", "forward+backward"),)}


def test_decode_sweep_over_cache_length(tiny: dict[str, int], fast: Settings) -> None:
    grid = Grid(axes=[Axis(field="seq", values=[64, 256, 1024])])
    plan, _ = plan_sweep(grid, ["sdpa", "naive"], fast, "cpu", mode="decode", **tiny)
    record = run_sweep(plan, InlineExecutor())
    for point in record.ordered_points():
        kv = costs.tensor_bytes(point.workload)
        assert point.kv_cache_bytes == kv["k"] + kv["v"]
        assert point.workload.q_len == 1 and point.workload.k_len == point.coords["seq"]
        assert all(r.status == "ok" and r.latency_ms for r in point.results)
    text = TerminalRenderer().render(record)
    assert "KV cache" in text and "per decode step" in text
    fit = record.fit("sdpa", "latency_ms", "seq")
    assert fit is not None and fit.points == 3
