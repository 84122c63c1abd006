"""A Python loop inside attention and copies that layouts force, on real traces.

CPU: the test captures the example user files (``examples/attention/loop_over_heads.py``,
``transposed_contiguous.py``) and the built-in fused variants on one small grouped-query
workload, then analyses each trace with the workload known (as ``attnprof profile`` does)
and from the trace alone (as for a foreign trace). GPU: none of the public traces holds
attention, so the rules must stay silent on all of them; what their device-side evidence
reads (copy kernels under a copy, launches under a loop) is checked on real copies and a
real loop in public A100/V100 traces.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from attnprof.analysis.analyze import analyze_trace
from attnprof.analysis.findings import FindingContext
from attnprof.analysis.findings.loops import LoopRun, find_repeated_groups, measure_loop
from attnprof.analysis.index.device_events import link_device_events
from attnprof.analysis.index.op_index import index_cpu_ops
from attnprof.analysis.index.regions import find_regions
from attnprof.analysis.index.views import view_regions
from attnprof.record.compare import RunRecord
from attnprof.record.trace_report import Finding, TraceReport
from attnprof.run.compare import compare
from attnprof.trace import Trace, load_trace
from attnprof.workload.problem import Workload
from attnprof.workload.settings import CaptureSpec, Settings, TimingPlan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "attention"
LOOP = f"{EXAMPLES / 'loop_over_heads.py'}:attention"
CONTIGUOUS = f"{EXAMPLES / 'transposed_contiguous.py'}:attention"
FUSED = ("sdpa", "sdpa-flash", "gqa-native", "flex")
#: 4 query heads sharing 2 K/V heads (the examples honour enable_gqa), S=64, D=16.
W = Workload(batch=2, heads=4, kv_heads=2, seq=64, head_dim=16, device="cpu")
STEPS = 2
RULES = ("looped-attention", "layout-copy")

PUBLIC = Path(__file__).resolve().parents[2] / "examples" / "traces"
PUBLIC_NAMES = sorted(p.name for p in PUBLIC.glob("*.json.gz")) if PUBLIC.is_dir() else []


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> RunRecord:
    settings = Settings(
        plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=2, max_samples=3,
                        min_warmup_calls=1),
        measure_memory=False, check_accuracy=False, measure_ceilings=False,
        trace_dir=tmp_path_factory.mktemp("loop-traces"), trace=CaptureSpec(steps=STEPS),
    )
    run = compare(W, [LOOP, CONTIGUOUS, *FUSED], settings=settings)
    assert all(r.status == "ok" for r in run.results), [r.reason for r in run.results]
    return run


@pytest.fixture(scope="module", params=["workload", "trace-only"])
def reports(request: pytest.FixtureRequest, record: RunRecord) -> dict[str, TraceReport]:
    known = request.param == "workload"
    out = {}
    for row in record.results:
        trace = load_trace(row.trace)
        if not known:
            trace = Trace(events=trace.events,
                          meta=msgspec.structs.replace(trace.meta, attnprof=None))
        out[row.variant] = analyze_trace(trace, result=row if known else None,
                                         workload=W if known else None)
    return out


def only(report: TraceReport, rule: str) -> Finding:
    (finding,) = report.findings_for(rule)
    return finding


def test_a_loop_over_heads_is_one_warning_with_its_evidence_and_fix(
        reports: dict[str, TraceReport]) -> None:
    report = reports[LOOP]
    loop = only(report, "looped-attention")
    assert loop.severity == "warning" and loop.region == f"attnprof::{LOOP}"
    assert loop.data["repeats"] == W.heads
    group = loop.data["group"]
    assert group[:3] == ["aten::select"] * 3  # q[:, h], k[:, h // g], v[:, h // g]
    assert group.count("aten::matmul") == 2 and "aten::softmax" in group
    assert loop.evidence[0].startswith(f"{W.heads} repetitions per forward of {len(group)} ops")
    assert loop.evidence[1] == ("aten::select of [2, 4, 64, 16] in every repetition walks dim 1 "
                                "(4 entries): one repetition per head")
    # The cost, against the region's own op table: every bmm of the forward is in the loop,
    # two per head where one batched pass would run two.
    region = report.regions[0]
    bmm = sum(k.per_forward for k in region.kernels if k.name == "aten::bmm")
    assert bmm == 2 * W.heads
    per_repeat = loop.data["compute_ops_per_forward"] / W.heads
    assert per_repeat == int(per_repeat) and 2 <= per_repeat <= 8
    assert f"batched, one pass runs {per_repeat:g}" in loop.evidence[2]
    assert 0 < loop.data["work_us_per_forward"] < loop.data["loop_cpu_us_per_forward"]
    assert math.isclose(loop.data["overhead_us_per_forward"],
                        loop.data["loop_cpu_us_per_forward"] - loop.data["work_us_per_forward"])
    assert loop.data["loop_cpu_us_per_forward"] <= region.cpu_us_per_forward
    assert "F.scaled_dot_product_attention" in loop.fix and "enable_gqa=True" in loop.fix
    # No layout copies here: the per-head writes are stacked, not copied into place.
    assert not report.findings_for("layout-copy")


def test_contiguous_of_transposed_qkv_is_one_warning_with_its_evidence_and_fix(
        reports: dict[str, TraceReport]) -> None:
    report = reports[CONTIGUOUS]
    copy = only(report, "layout-copy")
    assert copy.severity == "warning"
    assert copy.data["causes"] == ["aten::contiguous"]
    assert copy.data["paths"] == ["aten::contiguous › aten::clone › aten::copy_"]
    # q, k and v each copied once per forward (the output's transpose back is already
    # contiguous on CPU: SDPA's CPU flash kernel returns a [B, S, H, D] buffer).
    q_bytes = W.batch * W.heads * W.seq * W.head_dim * 4
    kv_bytes = W.batch * W.num_kv_heads * W.seq * W.head_dim * 4
    assert copy.data["copies_per_forward"] == 3
    assert copy.data["bytes_per_forward"] == q_bytes + 2 * kv_bytes
    assert any("[2, 64, 4, 16] float (q or the output in another layout" in e
               for e in copy.evidence)
    assert any("[2, 64, 2, 16] float (k/v in another layout" in e and "2 per forward" in e
               for e in copy.evidence)
    assert copy.data["copy_us_per_forward"] > 0
    assert "drop the .contiguous()" in copy.fix and "[B, H, S, D]" in copy.fix
    assert not report.findings_for("looped-attention")


@pytest.mark.parametrize("variant", FUSED)
def test_the_fused_built_ins_have_no_new_warning(reports: dict[str, TraceReport],
                                                 variant: str) -> None:
    report = reports[variant]
    assert not [f for f in report.findings if f.rule in RULES]
    assert not [f for f in report.findings if f.severity != "info"], [
        f.rule for f in report.findings]


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_no_public_trace_is_taken_for_looped_or_copied_attention(
        name: str, load_public: Any) -> None:
    # Training steps full of repeated layers, per-parameter optimizer loops and reshape
    # copies, but no attention: nothing for these rules to say.
    _, report = load_public(name)
    assert not [f for f in report.findings if f.rule in RULES]


def test_layout_copy_reads_the_copy_kernel_on_a_real_a100_trace(public_traces: Path) -> None:
    # a100_trace_control's forward reshapes a transposed [1024, 96, 8] tensor, a real layout
    # copy with its direct_copy kernel. With a workload whose q is those elements in another
    # layout ([16, 8, 96, 64]: 16·64 = 1024), the rule must find both copies of each step and
    # read their kernels' device time off the GPU timeline.
    trace = load_trace(public_traces / "a100_trace_control.json.gz")
    w = Workload(batch=16, heads=8, kv_heads=8, seq=96, head_dim=64, device="cuda")
    report = analyze_trace(trace, workload=w)
    copy = only(report, "layout-copy")
    assert copy.data["paths"] == ["aten::reshape › aten::clone › aten::copy_"]
    assert copy.data["copies_per_forward"] == 2
    assert copy.data["bytes_per_forward"] == 2 * 1024 * 8 * 96 * 4
    (line, _) = copy.evidence
    assert "[1024, 8, 96] float (q or k/v or the output in another layout" in line
    assert "kernel copy fp32" in line
    # The kernel time is the copies' device events, counted independently here.
    ops = index_cpu_ops(trace)
    devices = link_device_events(ops)
    names = ops.names
    copies = [i for i in range(len(ops)) if names[i] == "aten::copy_"
              and [names[j] for j in ops.ancestors(i)][:2] == ["aten::clone", "aten::reshape"]
              and ops.input_dims(i) == [[1024, 8, 96], [1024, 8, 96], []]]
    launched = np.flatnonzero(np.isin(devices.op, copies))
    steps = report.regions[0].instances
    assert len(launched) == len(copies) == 2 * steps
    expected = math.fsum((devices.end[launched] - devices.start[launched]).tolist()) / steps
    assert copy.data["kernel_us_per_forward"] == pytest.approx(expected)


def test_repeated_groups_in_a_sequence() -> None:
    a = np.array([7, 1, 2, 3, 1, 2, 3, 1, 2, 3, 9])
    assert find_repeated_groups(a) == [(1, 3, 3)]
    # Runs of one name are found once, not again at every multiple of their period.
    assert find_repeated_groups(np.array([5, 5, 5, 5, 5, 5])) == [(0, 1, 6)]
    assert find_repeated_groups(np.array([1, 2, 3, 4])) == []
    # A group with a repeated op inside (select ×3 ...) is found at its own period.
    body = [1, 1, 1, 2, 3, 4]
    found = find_repeated_groups(np.array([0, *body * 4, 0]))
    assert (1, 6, 4) in found and all(p != 12 for _, p, _ in found)


def test_a_real_gpu_loop_is_measured_launch_by_launch(public_traces: Path) -> None:
    # The V100 trace's SGD.zero_grad is a real Python loop: one aten::zero_ (and one fill
    # kernel) per parameter. Not attention, so the rule stays silent on it; what the rule
    # would count under a loop — launches per forward and per repetition, their kernels and
    # device time — is checked on it against the raw device events.
    trace = load_trace(public_traces / "v100_training_large.json.gz")
    report = analyze_trace(trace)
    ops = index_cpu_ops(trace)
    devices = link_device_events(ops)
    views, _ = view_regions(ops, devices, find_regions(ops), "cuda")
    (view,) = views
    ctx = FindingContext(report=report, views=(view,), ops=ops, devices=devices)
    zero_grad = next(i for i in view.instance_ops(0).tolist()
                     if ops.names[i] == "Optimizer.zero_grad#SGD.zero_grad")
    siblings = np.array(list(ops.children(zero_grad)))
    ((start, period, repeats),) = find_repeated_groups(ops.name[siblings])
    assert (start, period) == (0, 1) and repeats == len(siblings) == 404
    run = LoopRun(siblings=tuple(siblings.tolist()), start=start, period=period,
                  repeats=repeats)
    cost = measure_loop(ctx, view, [(0, run)])
    lo, hi = int(siblings[0]), int(ops.last[siblings[-1]])
    raw = np.flatnonzero((devices.op >= lo) & (devices.op <= hi))
    assert cost.launches * view.n == len(raw) == 404  # one fill kernel per repetition
    assert cost.kernels == ("elementwise fp32",)
    assert cost.device_us * view.n == pytest.approx(
        math.fsum((devices.end[raw] - devices.start[raw]).tolist()))
    assert cost.loop_cpu_us * view.n == pytest.approx(
        float(ops.end[siblings[-1]] - ops.start[siblings[0]]))
