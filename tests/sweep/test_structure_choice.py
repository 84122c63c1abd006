"""``recommend --kv-heads 2,4``: GQA or MHA answered in one table, each head layout's
best variant with its latency, peak memory and KV cache per token, and tie or slower."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from attnprof.analysis.recommend import Constraints, recommend
from attnprof.analysis.structure_choice import structure_choices, structure_label
from attnprof.cli.main import main
from attnprof.measure.stats import summarize
from attnprof.record.compare import VariantResult
from attnprof.record.sweep import SweepPoint, SweepRecord
from attnprof.run.rows import latency
from attnprof.workload.problem import Workload


def test_recommend_sets_gqa_beside_mha_in_one_table(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "rec.json"
    argv = ["recommend", "--kv-heads", "2,4", "--heads", "4", "--seq", "64", "--batch", "1",
            "--head-dim", "16", "--variants", "naive,sdpa", "--min-time", "0.01",
            "--rounds", "2", "--executor", "inline", "--json", str(saved)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "head layouts side by side: GQA or MHA" in out
    assert "GQA 2:1" in out and "MHA" in out and "KV cache / token" in out
    record = SweepRecord.load(saved)
    assert record.recommendation is not None
    rows = record.recommendation.structures
    assert [(r.structure, r.kv_heads, r.kv_cache_bytes_per_token) for r in rows] == [
        ("GQA 2:1", 2, 2 * 2 * 16 * 4), ("MHA", 4, 2 * 4 * 16 * 4)]
    verdicts = sorted(r.verdict or "" for r in rows)
    assert verdicts[0] == "fastest" and verdicts[1] in ("slower", "tie")
    other = next(r for r in rows if r.verdict != "fastest")
    assert other.p_value is not None and 0 <= other.p_value <= 1
    assert all(r.variant in ("naive", "sdpa") and r.latency_ms and r.peak_memory_bytes
               for r in rows)


def _point(index: int, kv: int, centre: float, seed: int, seq: int = 64) -> SweepPoint:
    rng = random.Random(seed)
    samples = [centre * (1 + rng.gauss(0, 0.01)) for _ in range(40)]
    row = VariantResult(variant="sdpa", family="sdpa", status="ok",
                        latency_ms=latency(summarize(samples), samples),
                        peak_memory_bytes=1 << 20, max_abs_error=1e-7, tolerance=1e-5,
                        within_tolerance=True)
    return SweepPoint(index=index, coords={"seq": seq, "kv_heads": kv},
                      workload=Workload(heads=8, kv_heads=kv, seq=seq, head_dim=64),
                      results=[row])


@pytest.mark.parametrize(("mha_ms", "verdict"), [(10.0, "tie"), (12.0, "slower")])
def test_a_layout_inside_the_noise_ties_and_one_beyond_it_is_slower(mha_ms: float,
                                                                   verdict: str) -> None:
    points = [_point(0, 2, 10.0, 1), _point(1, 8, mha_ms, 2)]
    rows = structure_choices(points, recommend(points, ["sdpa"], Constraints()))
    fastest = min(rows, key=lambda r: r.latency_ms or 0)
    other = next(r for r in rows if r is not fastest)
    assert fastest.verdict == "fastest" and other.verdict == verdict
    assert other.p_value is not None and (verdict == "tie" or other.p_value < 0.05)
    assert [r.kv_cache_bytes_per_token for r in rows] == [2 * 2 * 64 * 4, 2 * 8 * 64 * 4]


def test_layouts_are_grouped_by_the_shape_they_share() -> None:
    points = [_point(0, 2, 10.0, 1, seq=64), _point(1, 8, 10.0, 2, seq=64),
              _point(2, 2, 20.0, 3, seq=128), _point(3, 8, 30.0, 4, seq=128)]
    rows = structure_choices(points, recommend(points, ["sdpa"], Constraints()))
    assert [r.group for r in rows] == ["seq=64", "seq=64", "seq=128", "seq=128"]
    assert sum(r.verdict == "fastest" for r in rows) == 2  # one per shape


def test_no_layout_table_without_a_structural_axis() -> None:
    points = [_point(0, 2, 10.0, 1, seq=64), _point(1, 2, 11.0, 2, seq=128)]
    assert structure_choices(points, recommend(points, ["sdpa"], Constraints())) == []


def test_layout_labels() -> None:
    assert [structure_label(8, k) for k in (8, 2, 1)] == ["MHA", "GQA 4:1", "MQA"]


def test_head_dim_and_head_count_layouts_are_set_side_by_side_too() -> None:
    # recommend --heads 8,16 --head-dim 64,32 makes these: the same model width two ways.
    points = []
    for index, (heads, dim) in enumerate([(8, 64), (16, 32)]):
        point = _point(index, heads, 10.0 + index, index + 10)
        point.coords = {"seq": 64, "heads": heads, "head_dim": dim}
        point.workload = Workload(heads=heads, kv_heads=heads, seq=64, head_dim=dim)
        points.append(point)
    rows = structure_choices(points, recommend(points, ["sdpa"], Constraints()))
    assert [(r.structure, r.heads, r.head_dim, r.kv_cache_bytes_per_token) for r in rows] == [
        ("MHA", 8, 64, 2 * 8 * 64 * 4), ("MHA", 16, 32, 2 * 16 * 32 * 4)]
    assert [r.group for r in rows] == ["seq=64", "seq=64"]
