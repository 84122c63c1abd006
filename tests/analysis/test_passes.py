"""The analysis building blocks on real traces: nesting, regions, leaf ops, passes order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnprof.analysis.analyze import analyze_trace
from attnprof.analysis.index.compute_ops import (
    METADATA_OPS,
    compute_ops,
    is_structural,
)
from attnprof.analysis.index.device_events import link_device_events
from attnprof.analysis.index.op_index import index_cpu_ops
from attnprof.analysis.index.regions import PROFILER_STEP, WHOLE_TRACE, find_regions
from attnprof.analysis.index.views import view_regions
from attnprof.analysis.passes import REGION_PASSES, build_region_report
from attnprof.record.compare import RunRecord
from attnprof.trace import load_trace


def _attention(torch: Any) -> None:
    q, k, v = (torch.randn(1, 2, 32, 8) for _ in range(3))
    scores = (q @ k.transpose(-2, -1)) * 8 ** -0.5
    mask = torch.ones(32, 32, dtype=torch.bool).tril()
    _ = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v


@pytest.fixture(scope="module")
def foreign_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two traces made without attnprof: with a profiler schedule, and without one."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, schedule

    folder = tmp_path_factory.mktemp("foreign")
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True,
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1)) as prof:
        for _ in range(5):
            _attention(torch)
            prof.step()
    prof.export_chrome_trace(str(folder / "steps.json"))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        _attention(torch)
    prof.export_chrome_trace(str(folder / "plain.json"))
    return {"steps": folder / "steps.json", "plain": folder / "plain.json"}


def test_ops_nest_by_time_on_their_thread(cpu_record: RunRecord) -> None:
    ops = index_cpu_ops(load_trace(cpu_record.result("naive").trace))
    assert len(ops) > 50
    for i in range(len(ops)):
        p = int(ops.parent[i])
        if p >= 0:
            assert (ops.pid[p], ops.tid[p]) == (ops.pid[i], ops.tid[i])
            assert ops.start[p] <= ops.start[i] < ops.end[p]
            assert p < i <= ops.last[p]  # the subtree is a contiguous range
        assert all(int(ops.parent[j]) == i for j in ops.children(i))
    assert np.all(ops.self_us >= 0) and np.all(ops.self_us <= ops.dur + 1e-9)
    # The innermost op around a moment inside a copy is that copy.
    copy = ops.names.index("aten::copy_")
    mid = float(ops.start[copy] + ops.dur[copy] / 2)
    assert ops.enclosing(int(ops.pid[copy]), int(ops.tid[copy]), mid) == copy
    assert ops.enclosing(-5, -5, mid) == -1


def test_compute_ops_exclude_metadata_and_scalar_work(cpu_record: RunRecord) -> None:
    ops = index_cpu_ops(load_trace(cpu_record.result("naive").trace))
    found, work = compute_ops(ops, range(len(ops)))
    names = {ops.names[i] for i in found.tolist()}
    assert not names & METADATA_OPS
    assert {"aten::bmm", "aten::_softmax", "aten::copy_", "aten::masked_fill_",
            "aten::mul"} <= names
    for i, us in zip(found.tolist(), work.tolist(), strict=True):
        assert not is_structural(ops, i)
        below = [j for j in range(i + 1, int(ops.last[i]) + 1) if not is_structural(ops, j)]
        # A leaf: no work below, all its time is its work. Here every compute op is one.
        assert not below and us == pytest.approx(float(ops.dur[i]))
    # aten::mul converts its Python scalar with to/_to_copy/copy_ on 0-d tensors: not work.
    mul = next(i for i in found.tolist() if ops.names[i] == "aten::mul")
    assert int(ops.last[mul]) > mul  # it has children, all scalar conversions


def test_a_parent_doing_its_own_work_is_a_compute_op_too(cpu_record: RunRecord) -> None:
    # The math backend's safe softmax calls aten::all, which fills its output (aten::fill_,
    # a compute op) and then reduces in its own time: two pieces of work, as on a GPU.
    # The rule is structural (only initialising work below), so it holds at any shape.
    ops = index_cpu_ops(load_trace(cpu_record.result("sdpa-math").trace))
    found, work = compute_ops(ops, range(len(ops)))
    chosen = dict(zip(found.tolist(), work.tolist(), strict=True))
    alls = [i for i in range(len(ops)) if ops.names[i] == "aten::all"]
    assert alls
    for i in alls:
        fills = [j for j in ops.children(i) if ops.names[j] == "aten::fill_"]
        assert fills and all(j in chosen for j in fills)
        assert i in chosen  # the working parent, beside its child
        # Its work is its own time: the child's is not counted twice.
        own = float(ops.dur[i]) - sum(float(ops.dur[j]) for j in ops.children(i))
        assert chosen[i] == pytest.approx(own)
    # Wrappers and factories stay out: aten::ones' fill is all it does.
    assert not {ops.names[i] for i in chosen} & {"aten::_safe_softmax", "aten::matmul",
                                                  "aten::_scaled_dot_product_attention_math",
                                                  "aten::ones", "aten::masked_fill"}


def test_profiler_steps_are_regions_without_attnprof_annotations(
        foreign_traces: dict[str, Path]) -> None:
    report = analyze_trace(load_trace(foreign_traces["steps"]))
    (region,) = report.regions
    assert region.name == PROFILER_STEP and region.instances == 3
    per_forward = {k.name: k.per_forward for k in region.kernels}
    # randn ×3, the mask (ones' fill_, tril, ~), then bmm, mul, clone's copy_, masked_fill_,
    # softmax, bmm.
    assert per_forward == {"aten::normal_": 3, "aten::fill_": 1, "aten::tril": 1,
                           "aten::bitwise_not": 1, "aten::bmm": 2, "aten::mul": 1,
                           "aten::copy_": 1, "aten::masked_fill_": 1, "aten::_softmax": 1}
    assert {f.rule for f in report.findings} >= {"hidden-copy", "mask-rebuilt",
                                                 "scores-materialised"}


def test_a_trace_without_steps_is_one_region(foreign_traces: dict[str, Path]) -> None:
    report = analyze_trace(load_trace(foreign_traces["plain"]))
    (region,) = report.regions
    assert region.name == WHOLE_TRACE and region.instances == 1
    assert region.cpu_us_per_forward > 0 and region.kernels_per_forward >= 6
    assert region.peak_memory_bytes is None  # recorded without profile_memory


def test_region_passes_run_in_order_and_each_adds_fields(cpu_record: RunRecord) -> None:
    trace = load_trace(cpu_record.result("sdpa-math").trace)
    ops = index_cpu_ops(trace)
    devices = link_device_events(ops)
    (view,), unassigned = view_regions(ops, devices, find_regions(ops))
    assert len(devices) == 0 and len(unassigned) == 0
    fields: dict[str, Any] = {}
    for p in REGION_PASSES:
        new = p(view, fields)
        assert new and not set(new) & set(fields), p.__name__  # no pass overwrites another
        fields = {**fields, **new}
    assert build_region_report(view) == build_region_report(view, REGION_PASSES)
    assert fields["sdpa_backend"] == "math" and fields["verdict"] == "cpu-only"


def test_kv_expanded_by_expand_and_reshape(tmp_path: Path) -> None:
    # The Llama-style repeat_kv: a broadcast view that reshape has to copy.
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile, record_function

    from attnprof.workload.problem import Workload

    w = Workload(batch=1, heads=4, kv_heads=2, seq=32, head_dim=8)
    q = torch.randn(1, 4, 32, 8)
    k, v = torch.randn(1, 2, 32, 8), torch.randn(1, 2, 32, 8)

    def repeat_kv(x: Any) -> Any:
        return x[:, :, None].expand(1, 2, 2, 32, 8).reshape(1, 4, 32, 8)

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(2):
            with record_function("attnprof::repeat-kv-by-expand"):
                F.scaled_dot_product_attention(q, repeat_kv(k), repeat_kv(v), is_causal=True)
    path = tmp_path / "expand.json"
    prof.export_chrome_trace(str(path))
    report = analyze_trace(load_trace(path), workload=w)
    (kv,) = report.findings_for("kv-expanded")
    assert kv.data["ops"] == ["aten::reshape"] and kv.data["per_forward"] == 2
    assert kv.data["bytes_per_forward"] == 2 * 1 * 4 * 32 * 8 * 4
