"""``recommend --objective cost``: candidates ranked by cost per million tokens at a price,
each at the cheapest batch it was measured to run within the limits — so a variant that
fits a larger batch can win though it is slower per call — ties within the noise kept as
ties, and a missing or bad price said in one line before torch (issue 34)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.analysis.recommend import Constraints, recommend
from attnprof.analysis.recommend_cost import recommend_by_cost
from attnprof.cli.main import main
from attnprof.record.compare import Latency, VariantResult
from attnprof.record.family import load_record
from attnprof.record.sweep import RecommendRecord, SweepPoint, SweepRecord
from attnprof.run.executors.inline import InlineExecutor
from attnprof.run.sweep import plan_sweep, run_sweep
from attnprof.workload.grid import Axis, Grid
from attnprof.workload.prices import usd_per_call
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings

SHAPE = Workload(seq=128, heads=2, head_dim=16, batch=1)


def _row(variant: str, median: float, iqr: float, peak: int) -> VariantResult:
    latency = Latency(median=median, iqr=iqr, q1=median - iqr / 2, q3=median + iqr / 2,
                      min=median - iqr, max=median + iqr, count=20,
                      noisy=iqr / median > 0.1, samples=[median])
    return VariantResult(variant=variant, family="test", status="ok", latency_ms=latency,
                         peak_memory_bytes=peak, max_abs_error=1e-6, tolerance=1e-4,
                         within_tolerance=True)


def _point(index: int, batch: int, *rows: VariantResult) -> SweepPoint:
    return SweepPoint(index=index, coords={"seq": 128}, workload=SHAPE.replace(batch=batch),
                      results=list(rows))


def test_a_variant_that_fits_a_larger_batch_is_cheaper_per_token() -> None:
    # fast: 1 ms a call at batch 1 but 8 MiB, so batch 2 is the most that fits 16 MiB;
    # lean: 1.5 ms at batch 1 and 1 MiB: it ran batch 8 within the limit in 4 ms.
    limits = Constraints(max_memory_bytes=16 << 20)
    point = _point(0, 1, _row("fast", 1.0, 0.01, 8 << 20), _row("lean", 1.5, 0.01, 1 << 20))
    extra = [_point(1, 2, _row("fast", 1.9, 0.01, 16 << 20)),
             _point(2, 8, _row("lean", 4.0, 0.01, 8 << 20)),
             _point(3, 16, _row("lean", 7.0, 0.01, 32 << 20))]  # over the limit: not used
    (by_latency,) = recommend([point], ["fast", "lean"], limits, extra)
    assert by_latency.best is not None and by_latency.best.variant == "fast"
    (by_cost,) = recommend_by_cost([point], ["fast", "lean"], limits, 2.5, extra)
    best, runner = by_cost.best, by_cost.runner_up
    assert best is not None and runner is not None
    assert (best.variant, best.batch, best.point) == ("lean", 8, 2)
    assert (runner.variant, runner.batch) == ("fast", 2)
    tokens = 128  # per sequence
    assert best.usd_per_million_tokens == pytest.approx(
        usd_per_call(2.5, 4.0) / (8 * tokens) * 1e6)
    assert runner.usd_per_million_tokens == pytest.approx(
        usd_per_call(2.5, 1.9) / (2 * tokens) * 1e6)
    assert runner.usd_per_million_tokens is not None and best.usd_per_million_tokens
    ratio = runner.usd_per_million_tokens / best.usd_per_million_tokens  # 1.9
    assert by_cost.decided_by.startswith(
        f"cheapest per token at batch 8: fast costs {ratio:.2f}× as much")
    assert "faster per call" in by_cost.decided_by and by_cost.tie == []


def test_without_a_memory_limit_each_point_is_costed_at_its_own_batch() -> None:
    # a swept batch is another point, not a choice: batch 1's pick is costed at batch 1
    small = _point(0, 1, _row("a", 1.0, 0.01, 1 << 20), _row("b", 1.5, 0.01, 1 << 20))
    large = _point(1, 8, _row("a", 8.0, 0.01, 8 << 20), _row("b", 2.0, 0.01, 8 << 20))
    at_1, at_8 = recommend_by_cost([small, large], ["a", "b"], Constraints(), 2.5)
    assert at_1.best is not None and (at_1.best.variant, at_1.best.batch) == ("a", 1)
    assert at_8.best is not None and (at_8.best.variant, at_8.best.batch) == ("b", 8)
    # under a limit both fit, the larger batch is a choice: b at batch 8 is cheapest
    (limited, _) = recommend_by_cost([small, large], ["a", "b"],
                                     Constraints(max_memory_bytes=16 << 20), 2.5)
    assert limited.best is not None and (limited.best.variant, limited.best.batch) == ("b", 8)


def test_costs_within_the_noise_are_a_tie() -> None:
    # b costs 3% more per token than a: within the 5% margin, so neither is named alone
    point = _point(0, 1, _row("a", 1.0, 0.01, 1 << 20), _row("b", 1.03, 0.01, 1 << 20))
    (rec,) = recommend_by_cost([point], ["a", "b"], Constraints(), 2.5)
    assert rec.tie == ["a", "b"]
    assert rec.decided_by.startswith("tie within the noise: a and b (b 1.03× the cost")


def test_no_candidate_keeps_the_latency_pass_reason() -> None:
    point = _point(0, 1, _row("a", 10.0, 0.1, 1 << 20))
    (rec,) = recommend_by_cost([point], ["a"], Constraints(max_latency_ms=1.0), 2.5)
    assert rec.best is None and rec.decided_by.startswith("no variant runs here")
    assert "--max-latency" in rec.excluded["a"]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory, fast: Settings) -> Path:
    grid = Grid(axes=[Axis(field="seq", values=[64, 256])])
    plan, _ = plan_sweep(grid, ["naive", "sdpa"], fast, "cpu", batch=1, heads=2, head_dim=16)
    path = tmp_path_factory.mktemp("cost") / "sweep.json"
    run_sweep(plan, InlineExecutor()).save(path)
    return path


def test_recommend_from_a_sweep_ranks_by_cost_and_keeps_the_price(
        sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out, html = tmp_path / "rec.json", tmp_path / "rec.html"
    assert main(["recommend", "--from", str(sweep), "--objective", "cost", "--price", "2.5",
                 "--json", str(out), "--html", str(html)]) == 0
    assert "ranked by cost per million tokens at $2.5/hour (--price)" in html.read_text()
    text = " ".join(capsys.readouterr().out.split())  # the caption wraps
    assert "ranked by cost per million tokens" in text
    assert "price: $2.5/hour (--price)" in text and "/ 1M tokens (batch 1)" in text
    record = load_record(out)
    assert isinstance(record, RecommendRecord) and record.recommendation is not None
    saved = record.recommendation
    assert saved.objective == "cost" and saved.price is not None
    assert saved.price.usd_per_hour == 2.5
    points = {p.index: p for p in SweepRecord.load(sweep).points}
    for rec in saved.recommendations:
        assert rec.best is not None and rec.best.usd_per_million_tokens is not None
        # at one batch, cost per token follows latency: the cheapest is the fastest
        row = points[rec.point].result(rec.best.variant)
        assert row is not None and row.latency_ms is not None
        workload = points[rec.point].workload
        assert rec.best.usd_per_million_tokens == pytest.approx(
            usd_per_call(2.5, row.latency_ms.median) / (workload.batch * workload.seq) * 1e6)
        if rec.runner_up is not None and not rec.tie:
            assert rec.runner_up.usd_per_million_tokens is not None
            assert rec.runner_up.usd_per_million_tokens > rec.best.usd_per_million_tokens


def test_a_prices_file_without_the_machine_ranks_by_latency_and_says_so(
        sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('[prices]\nh100-sxm = 2.49\n')
    out = tmp_path / "rec.json"
    assert main(["recommend", "--from", str(sweep), "--objective", "cost", "--prices",
                 str(prices), "--json", str(out)]) == 0
    assert "no costs shown; ranked by latency instead" in " ".join(
        capsys.readouterr().out.split())
    record = load_record(out)
    assert isinstance(record, RecommendRecord) and record.recommendation is not None
    assert record.recommendation.objective == "latency"
    assert record.recommendation.price is None


_PROBE = """
import sys
from attnprof.cli.main import main
status = main(sys.argv[1:])
print(status, "torch" in sys.modules)
"""


@pytest.mark.parametrize(("flags", "said"), [
    (["--objective", "cost"], "--objective cost needs a price: give --price USD_PER_HOUR"),
    (["--objective", "cost", "--price", "nan"], "--price must be a positive number"),
    (["--objective", "cost", "--price", "abc"], "--price 'abc' is not a number"),
    (["--price", "-2"], "--price must be a positive number"),
])
def test_a_missing_or_bad_price_is_one_line_before_torch(flags: list[str], said: str) -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE, "recommend", "--seq", "16",
                           *flags, "--no-store"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.split() == ["2", "False"], (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("attnprof: error:") and said in line, line
