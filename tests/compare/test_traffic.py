"""Traffic: the bytes each variant's ops read and wrote, modelled from the shapes and
dtypes the profiler records — beside the I/O floor (Q, K, V, O once), which every variant
shares. The roofline, GB/s and the roofline's verdict use the traffic."""

from __future__ import annotations

import pytest
from rich.console import Console

from attnprof.knowledge.op_traffic import OpShapes, leaf_compute_ops, op_bytes, traffic
from attnprof.record.compare import CompareRecord
from attnprof.render.compare_table import render_compare
from attnprof.render.figures.compare import compare_figures, roofline_points
from attnprof.run.compare import compare
from attnprof.workload import costs
from attnprof.workload.settings import Settings, TimingPlan


def _op(name: str, dims: list[list[int]], types: list[str], start: float, end: float
        ) -> OpShapes:
    return OpShapes(name, dims, types, start, end)


# ----- the model, on ops as the profiler records them --------------------------------
def test_only_leaf_compute_ops_count_and_views_count_nothing() -> None:
    ops = [
        _op("aten::matmul", [[2, 8, 4], [2, 4, 8]], ["float", "float"], 0, 100),
        _op("aten::expand", [[2, 8, 4], [], []], ["float", "ScalarList", "Scalar"], 1, 2),
        _op("aten::bmm", [[2, 8, 4], [2, 4, 8]], ["float", "float"], 10, 90),
        _op("aten::resolve_conj", [[2, 4, 8]], ["float"], 11, 12),
        _op("aten::softmax", [[2, 8, 8], [], []], ["float", "Scalar", ""], 110, 200),
        _op("aten::_softmax", [[2, 8, 8], [], []], ["float", "Scalar", "Scalar"], 120, 190),
        # a mul by a Python float: the wrapped scalar's copy is no compute child
        _op("aten::mul", [[2, 8, 8], []], ["float", "double"], 210, 300),
        _op("aten::copy_", [[], [], []], ["float", "double", "Scalar"], 220, 230),
    ]
    assert [o.name for o in leaf_compute_ops(ops)] == ["aten::bmm", "aten::_softmax",
                                                       "aten::mul"]
    t = traffic(ops)
    # bmm: reads 2·8·4 + 2·4·8 floats, writes 2·8·8; _softmax and mul: read and write 2·8·8
    assert t.read_bytes == 4 * (64 + 64 + 128 + 128) + 8  # + the scalar mul reads
    assert t.written_bytes == 4 * (128 + 128 + 128)
    assert (t.ops, t.assumed) == (3, 0)


def test_outputs_follow_from_the_inputs() -> None:
    def written(name: str, dims: list[list[int]], types: list[str]) -> int:
        return op_bytes(_op(name, dims, types, 0, 1))[1]

    assert written("aten::addmm", [[16], [4, 8], [8, 16]], ["float"] * 3) == 4 * 4 * 16
    assert written("aten::masked_fill", [[2, 4, 4], [4, 4], []],
                   ["float", "bool", "Scalar"]) == 4 * 32  # broadcast, the scores' dtype
    assert written("aten::where", [[4, 1], [], [4, 4]], ["bool", "float", "float"]) == 4 * 16
    assert written("aten::eq", [[4, 4], [4, 4]], ["float", "float"]) == 16  # bools
    assert written("aten::sum", [[4, 4], [], [], []], ["float", "", "", ""]) == 0
    assert written("aten::_scaled_dot_product_flash_attention_for_cpu",
                   [[1, 2, 8, 4], [1, 2, 16, 4], [1, 2, 16, 6]],
                   ["c10::BFloat16"] * 3) == 2 * 2 * 8 * 6
    # in place: writes its first input; copy_ reads its source only
    assert op_bytes(_op("aten::masked_fill_", [[2, 4, 4], [4, 4], []],
                        ["float", "bool", "Scalar"], 0, 1)) == (4 * 32 + 16, 4 * 32, False)
    assert op_bytes(_op("aten::copy_", [[4, 4], [4, 4], []], ["c10::Half", "float", ""],
                        0, 1)) == (4 * 16, 2 * 16, False)
    # no rule fits: the largest input, and said so
    assert op_bytes(_op("aten::embedding", [[64, 8], [2, 3]], ["float", "long int"],
                        0, 1)) == (4 * 512 + 8 * 6, 4 * 512, True)


def test_a_compiled_graph_or_nothing_counted_is_no_traffic() -> None:
    # torch.compile's generated kernels record no ops: a model of what the profiler saw
    # would read 0 B (flex_attention compiled did, before), never a figure to show.
    ops = [_op("Torch-Compiled Region: 0/0", [], [], 0, 100),
           _op("## Call CompiledFxGraph fgo4f3kv ##", [], [], 1, 99),
           _op("aten::empty", [[], []], ["ScalarList", ""], 1, 2),
           _op("aten::mul", [[4, 4], []], ["float", "double"], 3, 4)]
    assert traffic(ops) is None
    assert traffic([_op("aten::view", [[4, 4], []], ["float", "ScalarList"], 0, 1)]) is None


# ----- compare --variants naive,sdpa at S=256 ------------------------------------------
@pytest.fixture(scope="module")
def naive_sdpa() -> CompareRecord:
    settings = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3,
                                        max_samples=5, min_warmup_calls=1),
                        check_accuracy=False)
    return compare(variants=["naive", "sdpa"], settings=settings, batch=1, heads=2,
                   kv_heads=2, seq=256, head_dim=16, causal=True,
                   device="cpu")


def test_compare_records_each_variants_traffic_beside_the_io_floor(
        naive_sdpa: CompareRecord) -> None:
    naive, sdpa = naive_sdpa.result("naive"), naive_sdpa.result("sdpa")
    floor = costs.step_bytes(naive_sdpa.workload_spec())
    q = 1 * 2 * 256 * 16 * 4
    assert floor == 4 * q  # Q, K, V read and O written once
    assert naive.bytes_moved == sdpa.bytes_moved == floor
    # SDPA's flash kernel is one op reading Q, K, V and writing O: its traffic is the floor
    assert sdpa.traffic_bytes == floor and sdpa.traffic_ops == 1
    # naive, by hand: q·kᵀ writes the S×S scores, ×scale reads and writes them, the
    # out-of-place masked_fill copies them and fills the copy in place (reading the S×S
    # bool mask), softmax reads and writes them, ·v reads them: 10 passes over S×S floats
    # (and the scale, a 0-dim double the mul reads)
    scores = 1 * 2 * 256 * 256 * 4
    assert naive.traffic_bytes == floor + 10 * scores + 256 * 256 + 8
    assert naive.traffic_assumed_ops == 0
    assert naive.traffic_bytes is not None and sdpa.traffic_bytes is not None
    assert naive.traffic_bytes >= 3 * sdpa.traffic_bytes
    # GB/s is over the traffic
    for row in (naive, sdpa):
        assert row.gbytes_basis == "traffic"
        assert row.latency_ms is not None and row.gbytes_per_s == pytest.approx(
            row.traffic_bytes / (row.latency_ms.median / 1e3) / 1e9)
        assert row.bound_by in ("memory", "compute")


def test_the_roofline_places_them_apart_and_names_the_io_floor(
        naive_sdpa: CompareRecord) -> None:
    points = {p["variant"]: p for p in roofline_points(naive_sdpa)}
    x = {v: p["flops"] / p["bytes"] for v, p in points.items()}
    assert x["sdpa"] >= 3 * x["naive"]  # to the right: fewer bytes for the same FLOPs
    assert {p["bytes_are"] for p in points.values()} == {"traffic"}
    roofline = next(f for f in compare_figures(naive_sdpa) if f.name == "roofline")
    dots = roofline.spec["layer"][1]["data"]["values"]
    assert {d["variant"]: d["bytes"] for d in dots} == {
        "naive": naive_sdpa.result("naive").traffic_bytes,
        "sdpa": naive_sdpa.result("sdpa").traffic_bytes}
    assert "not the I/O floor" in " ".join(roofline.spec["title"]["subtitle"])
    console = Console(record=True, width=250, color_system=None)
    render_compare(naive_sdpa, console)
    text = console.export_text()
    assert "traffic" in text and "×floor" in text
    assert "I/O floor: 128.0 KiB a step" in text  # 4 × 32 KiB
