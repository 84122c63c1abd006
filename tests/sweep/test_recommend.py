"""Recommendations: the fastest variant per shape that ran, is within tolerance and meets
the limits — never a fast wrong one — with the runner-up and what decided it."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.analysis.recommend import Constraints, recommend
from attnprof.cli.main import main
from attnprof.record.compare import Latency, VariantResult
from attnprof.record.sweep import SweepPoint, SweepRecord
from attnprof.run.executors.inline import InlineExecutor
from attnprof.run.sweep import plan_sweep, run_sweep
from attnprof.workload.grid import Axis, Grid
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings


@pytest.fixture(scope="module")
def sweep(failing: Path, tmp_path_factory: pytest.TempPathFactory, tiny: dict[str, int],
          fast: Settings) -> Path:
    grid = Grid(axes=[Axis(field="seq", values=[32, 128, 512])])
    variants = ["naive", "sdpa-flash", f"{failing}:fast_but_wrong", f"{failing}:oom_from_32"]
    plan, _ = plan_sweep(grid, variants, fast, "cpu", **tiny)
    path = tmp_path_factory.mktemp("rec") / "sweep.json"
    run_sweep(plan, InlineExecutor()).save(path)
    return path


def test_never_a_variant_out_of_tolerance_or_failed_there(sweep: Path, failing: Path) -> None:
    record = SweepRecord.load(sweep)
    wrong = f"{failing}:fast_but_wrong"
    for rec in recommend(record.points, record.variants, Constraints()):
        assert rec.best is not None and rec.best.variant in ("naive", "sdpa-flash")
        assert rec.runner_up is not None and rec.runner_up.variant in ("naive", "sdpa-flash")
        assert rec.best.latency_ms <= rec.runner_up.latency_ms
        assert rec.excluded[wrong].startswith("wrong here: its output is off the float64 "
                                              "reference by up to")
        assert rec.excluded[f"{failing}:oom_from_32"].startswith(("oom here", "skipped here"))
        point = record.ordered_points()[rec.point]
        wrong_row = point.result(wrong)
        assert wrong_row is not None and wrong_row.latency_ms is not None
        if wrong_row.latency_ms.median < rec.best.latency_ms:  # it is faster: and that is why
            assert rec.decided_by.startswith(f"{wrong} is faster")


def test_constraints_decide(sweep: Path) -> None:
    record = SweepRecord.load(sweep)
    flash_peak = max(p.result("sdpa-flash").peak_memory_bytes  # type: ignore[union-attr]
                     for p in record.points)
    tight = Constraints(max_memory_bytes=flash_peak)
    largest = recommend(record.points, record.variants, tight)[-1]  # seq 512
    assert largest.best is not None and largest.best.variant == "sdpa-flash"
    assert "(--max-memory)" in largest.excluded["naive"]
    assert largest.runner_up is None  # naive was the only other candidate
    nothing = recommend(record.points, record.variants, Constraints(max_latency_ms=1e-9))
    assert all(r.best is None and "no variant runs here" in r.decided_by for r in nothing)


def test_recommend_command_from_a_record(sweep: Path, failing: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recommend", "--from", str(sweep), "--max-memory", "1GiB"]) == 0
    out = capsys.readouterr().out
    assert "attnprof recommend — peak memory ≤ 1.0 GiB" in out
    assert "wrong here" in out and "fast_but_wrong" in out
    assert main(["recommend", "--from", str(sweep), "--seq", "64"]) == 2
    assert "--from reads a finished sweep" in capsys.readouterr().err


def test_recommend_measures_the_batch_a_lean_variant_fits(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    argv = ["recommend", "--seq", "256", "--batch", "1", "--heads", "2", "--head-dim", "16",
            "--variants", "naive,sdpa-flash", "--min-time", "0.01", "--rounds", "1",
            "--max-memory", "32MiB"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "within 32.0 MiB, sdpa-flash runs batch" in out and "tokens/s (measured" in out


def _timed(variant: str, median: float, iqr: float) -> VariantResult:
    """An ``ok`` row within tolerance with this latency median and IQR."""
    latency = Latency(median=median, iqr=iqr, q1=median - iqr / 2, q3=median + iqr / 2,
                      min=median - iqr, max=median + iqr, count=20,
                      noisy=iqr / median > 0.1, samples=[median])
    return VariantResult(variant=variant, family="test", status="ok", latency_ms=latency,
                         peak_memory_bytes=1 << 20, max_abs_error=1e-6, tolerance=1e-4,
                         within_tolerance=True)


@pytest.mark.parametrize(("b_median", "b_iqr", "tie"), [
    (10.2, 0.2, True),    # 2% apart: within 5% whatever the spread
    (12.0, 3.6, True),    # 20% apart, but b's samples spread over 30%
    (12.0, 0.2, False),   # 20% apart, both tight: a measured order
])
def test_a_difference_within_the_noise_is_a_tie_that_names_both(
        b_median: float, b_iqr: float, tie: bool) -> None:
    point = SweepPoint(index=0, coords={"seq": 128}, workload=Workload(seq=128),
                       results=[_timed("a", 10.0, 0.3), _timed("b", b_median, b_iqr),
                                _timed("c", 30.0, 0.3)])
    (rec,) = recommend([point], ["a", "b", "c"], Constraints())
    assert rec.best is not None and rec.best.variant == "a"
    if tie:
        assert rec.tie == ["a", "b"]
        assert rec.decided_by.startswith("tie within the noise: a and b (b ")
    else:
        assert rec.tie == [] and rec.decided_by == "fastest: b takes 1.20× as long"


def test_recommend_json_saves_the_recommendation(sweep: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    measured = tmp_path / "measured.json"
    argv = ["recommend", "--seq", "32,64", "--batch", "1", "--heads", "2", "--head-dim", "16",
            "--variants", "naive,sdpa", "--min-time", "0.01", "--rounds", "1",
            "--executor", "inline", "--max-latency", "1s", "--json", str(measured)]
    assert main(argv) == 0
    record = SweepRecord.load(measured)
    saved = record.recommendation
    assert saved is not None and saved.source == "measured now"
    assert saved.constraints == Constraints(max_latency_ms=1000.0)
    assert [r.point for r in saved.recommendations] == [0, 1]
    assert recommend(record.points, record.variants, saved.constraints) == \
        saved.recommendations  # what was printed is what was saved
    # From a record: the record read, with the recommendation added, written elsewhere.
    again = tmp_path / "again.json"
    assert main(["recommend", "--from", str(sweep), "--max-memory", "1GiB",
                 "--json", str(again)]) == 0
    copy = SweepRecord.load(again)
    assert copy.points == SweepRecord.load(sweep).points
    assert copy.recommendation is not None
    assert copy.recommendation.constraints.max_memory_bytes == 1 << 30
    assert copy.recommendation.source == f"from {sweep}"
    assert main(["recommend", "--from", str(sweep), "--json", str(sweep)]) == 2
    capsys.readouterr()
