"""Expected vs observed on real CPU captures, and the ``check`` command's exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.analysis.analyze import analyze_trace
from attnprof.analysis.check import Measured, check_expectations, pick_region
from attnprof.errors import UsageError
from attnprof.record.compare import RunRecord
from attnprof.record.trace_report import TraceReport
from attnprof.run.compare import compare
from attnprof.trace import load_trace
from attnprof.workload.expectations import Bound, Expectations, PatternBound, PerForward
from attnprof.workload.problem import Workload
from attnprof.workload.settings import CaptureSpec, Settings, TimingPlan

WORKLOAD = Workload(batch=1, heads=2, seq=32, head_dim=16)


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> RunRecord:
    settings = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=2,
                                        max_samples=3, min_warmup_calls=1),
                        trace_dir=tmp_path_factory.mktemp("traces"), trace=CaptureSpec(steps=2),
                        measure_ceilings=False)
    return compare(WORKLOAD, ["naive", "naive-inplace", "sdpa-flash", "sdpa-math"],
                   settings=settings)


@pytest.fixture(scope="module")
def reports(captured: RunRecord) -> dict[str, TraceReport]:
    return {r.variant: analyze_trace(load_trace(r.trace)) for r in captured.results}


COPY = Expectations(kernel=[PatternBound(match=r"^aten::copy_$", count=0)])


def test_the_hidden_copy_is_a_mismatch_only_for_out_of_place_naive(
        reports: dict[str, TraceReport]) -> None:
    (naive,) = check_expectations(COPY, pick_region(reports["naive"], None))
    (inplace,) = check_expectations(COPY, pick_region(reports["naive-inplace"], None))
    assert not naive.ok and naive.observed == "1" and "aten::copy_ ×1" in naive.detail
    assert inplace.ok and inplace.observed == "0"


def test_kernels_per_forward_and_patterns(reports: dict[str, TraceReport]) -> None:
    exp = Expectations(per_forward=PerForward(kernels=Bound(count=1)),
                       kernel=[PatternBound(match="flash", count=1)],
                       op=[PatternBound(match="_safe_softmax", max=0)])
    rows = check_expectations(exp, pick_region(reports["sdpa-flash"], "sdpa-flash"))
    assert [r.ok for r in rows] == [True, True, True]
    rows = check_expectations(exp, pick_region(reports["naive"], None))
    assert [r.ok for r in rows] == [False, False, True]


def test_measured_numbers_win_over_trace_numbers(reports: dict[str, TraceReport]) -> None:
    exp = Expectations(per_forward=PerForward(latency_ms=Bound(max=5.0),
                                              peak_memory_mib=Bound(max=1.0)))
    region = pick_region(reports["sdpa-flash"], None)
    lat, mem = check_expectations(exp, region, Measured(latency_ms=7.5,
                                                        peak_memory_bytes=3 << 20))
    assert (lat.ok, lat.observed, lat.detail) == (False, "7.5 ms", "measured median")
    assert (mem.ok, mem.observed) == (False, "3 MiB")
    lat, mem = check_expectations(exp, region)
    assert lat.detail == "CPU time of the region in the trace"
    assert mem.detail == "allocation events in the trace"


def test_unknown_region_names_the_candidates(reports: dict[str, TraceReport]) -> None:
    with pytest.raises(UsageError, match=r"region 'sdpa' is not in .*attnprof::naive"):
        pick_region(reports["naive"], "sdpa")


def attnprof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attnprof", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_check_exit_codes_on_a_trace(captured: RunRecord, tmp_path: Path) -> None:
    naive = captured.result("naive").trace
    inplace = captured.result("naive-inplace").trace
    expect = tmp_path / "no_copy.toml"
    expect.write_text('title = "no hidden copy"\n[[kernel]]\nmatch = "^aten::copy_$"\ncount = 0\n')
    ok = attnprof("check", "--expect", str(expect), inplace, cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "the 1 expectation holds" in ok.stdout
    bad = attnprof("check", "--expect", str(expect), naive, cwd=tmp_path)
    assert bad.returncode == 1
    assert "mismatch" in bad.stdout and "1 of 1 expectation did not hold" in bad.stdout


def test_check_a_variant_measured_now(tmp_path: Path) -> None:
    expect = tmp_path / "flash.toml"
    expect.write_text("[per_forward]\nkernels = { count = 1 }\n[[kernel]]\nmatch = 'flash'\n"
                      "count = 1\n")
    result = attnprof("check", "--expect", str(expect), "sdpa-flash", "--batch", "1",
                      "--heads", "2", "--seq", "32", "--head-dim", "16", "--min-time", "0.01",
                      "--steps", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sdpa-flash measured now" in result.stdout
    assert list(tmp_path.iterdir()) == [expect]  # its trace went to a temporary folder


@pytest.mark.parametrize(
    ("text", "target", "needle"),
    [
        ("[[kernel]]\nmatch = 'x'\ncout = 1\n", "sdpa", "unknown field `cout`"),
        ("[[kernel]\n", "sdpa", "is not valid TOML"),
        ("[[kernel]]\nmatch = 'x'\ncount = 1\n", "missing.json.gz", "does not exist"),
        ("[[kernel]]\nmatch = 'x'\ncount = 1\n", "nope", "unknown variant 'nope'"),
    ],
)
def test_check_usage_errors_exit_2(text: str, target: str, needle: str,
                                   tmp_path: Path) -> None:
    expect = tmp_path / "e.toml"
    expect.write_text(text)
    result = attnprof("check", "--expect", str(expect), target, cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0]


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "expectations"


@pytest.mark.parametrize(("example", "variant", "status"), [
    ("fused-attention.toml", "sdpa-flash", 0),
    ("fused-attention.toml", "sdpa-math", 1),
    ("fused-attention.toml", "naive", 1),
    ("inplace-mask.toml", "naive-inplace", 0),
    ("inplace-mask.toml", "naive", 1),
    ("math-backend.toml", "sdpa-math", 0),
    ("math-backend.toml", "sdpa-flash", 1),
])
def test_shipped_examples_say_what_they_promise(example: str, variant: str, status: int,
                                                captured: RunRecord, tmp_path: Path) -> None:
    # Each example's header says which variants hold and which fail it; check on the traces.
    result = attnprof("check", "--expect", str(EXAMPLES / example),
                      captured.result(variant).trace, cwd=tmp_path)
    assert result.returncode == status, result.stdout + result.stderr


def test_attention_share_bounds(reports: dict[str, TraceReport]) -> None:
    exp = Expectations(per_forward=PerForward(attention_share=Bound(min=0.9)))
    (flash,) = check_expectations(exp, pick_region(reports["sdpa-flash"], None))
    assert flash.ok and flash.observed == "1"
    # Hand-written attention is found by its pattern, and the row says it was inferred.
    (naive,) = check_expectations(exp, pick_region(reports["naive"], None))
    assert "inferred" in naive.detail and float(naive.observed) > 0
    # A bound the share misses fails, visibly.
    below = Expectations(per_forward=PerForward(attention_share=Bound(max=0.01)))
    (missed,) = check_expectations(below, pick_region(reports["naive"], None))
    assert not missed.ok and missed.observed == naive.observed
