"""What the analysis says about real CPU captures of each variant (the issue's acceptance).

Every test runs twice (``cpu_reports`` is parametrized): with the workload known, and from
the trace alone, as for a foreign trace. The findings must hold either way.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import pairwise

from attnprof.record.trace_report import Finding, TraceReport
from attnprof.workload.problem import Workload


def rules(report: TraceReport) -> set[str]:
    return {f.rule for f in report.findings}


def only(report: TraceReport, rule: str) -> Finding:
    (finding,) = report.findings_for(rule)
    return finding


def test_each_forward_is_one_region_instance(cpu_reports: dict[str, TraceReport],
                                             steps: int) -> None:
    for variant, report in cpu_reports.items():
        (region,) = report.regions
        assert region.name == f"attnprof::{variant}"
        assert region.instances == steps
        assert region.kernel_source == "cpu-ops" and report.device == "cpu"
        assert region.verdict == "cpu-only" and region.device_us_per_forward is None
        # Per-forward counts are whole numbers: every forward runs the same ops.
        assert all(k.per_forward * steps == k.count for k in region.kernels)
        assert region.kernels_per_forward == sum(k.per_forward for k in region.kernels)
        assert math.isclose(sum(k.share for k in region.kernels), 1.0)


def test_naive_has_a_hidden_copy_that_inplace_does_not(
        cpu_reports: dict[str, TraceReport], workload: Workload) -> None:
    naive, inplace = cpu_reports["naive"], cpu_reports["naive-inplace"]
    copy = only(naive, "hidden-copy")
    assert copy.severity == "warning" and copy.data["op"] == "aten::masked_fill"
    scores = workload.batch * workload.heads * workload.seq * workload.seq * 4
    assert copy.data["bytes"] == scores and copy.data["per_forward"] == 1
    assert "aten::clone → aten::copy_" in copy.evidence[0] and "masked_fill_" in copy.fix
    assert "hidden-copy" not in rules(inplace)
    # Exactly one op fewer per forward, and it is that copy.
    a, b = naive.regions[0], inplace.regions[0]
    assert a.kernels_per_forward - b.kernels_per_forward == 1
    per_forward = [Counter({k.name: k.per_forward for k in r.kernels if k.name != "aten::copy_"})
                   for r in (a, b)]
    assert per_forward[0] == per_forward[1]
    copies = [[k.call_path for k in r.kernels if k.name == "aten::copy_"] for r in (a, b)]
    assert sorted(copies[0]) == sorted(copies[1] + ["aten::masked_fill › aten::clone"])


def test_sdpa_math_rebuilds_the_mask_and_runs_safe_softmax(
        cpu_reports: dict[str, TraceReport]) -> None:
    report = cpu_reports["sdpa-math"]
    region = report.regions[0]
    assert region.sdpa_backend == "math"
    mask = only(report, "mask-rebuilt")
    assert {"aten::ones", "aten::tril"} <= set(mask.data["ops"])
    assert any("_scaled_dot_product_attention_math" in e for e in mask.evidence)
    safe = only(report, "safe-softmax")
    assert "aten::isneginf" in safe.evidence[0] and safe.severity == "info"
    assert only(report, "sdpa-backend").severity == "info"  # pinned math, and math ran
    # GQA on the math path: K/V expanded under the SDPA op, reported once, not as kv-expanded.
    assert only(report, "gqa-math-fallback").data["repeats_per_forward"] == 2
    assert "kv-expanded" not in rules(report)
    assert "scores-materialised" in rules(report)


def test_sdpa_flash_is_one_fused_op(cpu_reports: dict[str, TraceReport]) -> None:
    report = cpu_reports["sdpa-flash"]
    (kernel,) = report.regions[0].kernels
    assert kernel.name == "aten::_scaled_dot_product_flash_attention_for_cpu"
    assert kernel.family == "cpu_flash" and kernel.per_forward == 1
    assert kernel.launched_by == "aten::scaled_dot_product_attention"
    backend = only(report, "sdpa-backend")
    assert backend.severity == "info" and backend.data["backend"] == "flash (CPU)"
    assert any("one fused op" in e for e in backend.evidence)
    assert not [f for f in report.findings if f.severity != "info"]


def test_flex_eager_is_flagged_uncompiled(cpu_reports: dict[str, TraceReport],
                                          workload: Workload) -> None:
    report = cpu_reports["flex-eager"]
    flex = only(report, "flex-uncompiled")
    assert flex.severity == "critical" and "torch.compile" in flex.fix
    scores = workload.batch * workload.heads * workload.seq * workload.seq * 4
    assert flex.data["largest_tensor_bytes"] == scores
    assert {"scores-materialised", "mask-rebuilt"} <= rules(report)
    assert report.regions[0].kernels_per_forward > 10  # unfused: many ops, not one kernel
    # The safe softmax here is flex's eager path, so its fix is to compile, not "expected".
    assert "torch.compile" in only(report, "safe-softmax").fix
    assert "math backend" in only(cpu_reports["sdpa-math"], "safe-softmax").fix
    # Call paths name each op once: vmap nests aten::le in itself, shown as one step.
    for kernel in report.regions[0].kernels:
        steps = (kernel.call_path or "").split(" › ")
        assert all(a != b for a, b in pairwise(steps)), kernel.call_path


def test_gqa_repeat_kv_is_flagged_for_materialised_kv(
        cpu_reports: dict[str, TraceReport], workload: Workload) -> None:
    report = cpu_reports["gqa-repeat-kv"]
    kv = only(report, "kv-expanded")
    w = workload
    # K and V, each written at full query-head count, every forward.
    assert kv.data["bytes_per_forward"] == 2 * w.batch * w.heads * w.seq * w.head_dim * 4
    assert kv.data["ops"] == ["aten::repeat_interleave"] and kv.data["per_forward"] == 2
    assert report.regions[0].sdpa_backend == "flash (CPU)"
    assert "scores-materialised" not in rules(report)


def test_fused_variants_do_not_materialise_scores(cpu_reports: dict[str, TraceReport]) -> None:
    for variant in ("sdpa-flash", "gqa-repeat-kv"):
        assert "scores-materialised" not in rules(cpu_reports[variant])
    for variant in ("naive", "naive-inplace", "sdpa-math", "flex-eager"):
        assert "scores-materialised" in rules(cpu_reports[variant])


def test_cpu_only_trace_is_said_once(cpu_reports: dict[str, TraceReport]) -> None:
    for report in cpu_reports.values():
        (note,) = report.findings_for("cpu-only")
        assert note.region is None and note.severity == "info"
        assert "cpu-bound" not in rules(report)


def test_memory_peak_and_largest_allocation(cpu_reports: dict[str, TraceReport],
                                            workload: Workload) -> None:
    scores = workload.batch * workload.heads * workload.seq * workload.seq * 4
    naive = cpu_reports["naive"].regions[0]
    assert naive.memory_device == "cpu"
    assert naive.largest_allocation_bytes == scores
    assert naive.largest_allocation_op == "aten::bmm"
    # Scores, their masked copy and the softmax output coexist at the peak.
    assert naive.peak_memory_bytes is not None and naive.peak_memory_bytes >= 2 * scores
    flash = cpu_reports["sdpa-flash"].regions[0]
    assert flash.peak_memory_bytes is not None and flash.peak_memory_bytes < scores


def test_op_tree_agrees_with_the_flat_op_table(cpu_reports: dict[str, TraceReport]) -> None:
    region = cpu_reports["naive"].regions[0]
    totals: dict[str, float] = {}

    def walk(nodes: list) -> None:
        for node in nodes:
            totals[node.name] = totals.get(node.name, 0.0) + node.per_forward
            assert node.self_us <= node.total_us + 1e-6
            walk(node.children)

    walk(region.tree)
    assert totals == {o.name: o.per_forward for o in region.ops}
    top = [n.name for n in region.tree]
    assert "aten::masked_fill" in top and "aten::softmax" in top
    masked = next(n for n in region.tree if n.name == "aten::masked_fill")
    assert [c.name for c in masked.children if c.name.startswith("aten::")][-2:] == [
        "aten::clone", "aten::masked_fill_"]
