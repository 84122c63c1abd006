"""Headlines name ties as ties, by the project's noise rule (attnprof.noise.differ): a
model phase's implementations without a verdict from interleaved rounds, and a
comparison's rows, read from records saved by earlier versions."""

from __future__ import annotations

from pathlib import Path

import msgspec

from attnprof.record.compare import CompareRecord, Latency, rows_headline
from attnprof.record.family import load_record
from attnprof.record.model import PhaseRun, Versus, _fastest_runs

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "records"


def _run(name: str, median: float, versus: Versus | None = None) -> PhaseRun:
    samples = [median * f for f in (0.99, 1.0, 1.0, 1.0, 1.01)]
    return PhaseRun(implementation=name, phase="prefill", status="ok", versus=versus,
                    latency_ms=Latency(median=median, iqr=median * 0.01, q1=median * 0.995,
                                       q3=median * 1.005, min=min(samples),
                                       max=max(samples), count=5, noisy=False,
                                       samples=samples))


def test_model_runs_without_rounds_tie_by_their_medians() -> None:
    best, slower = _fastest_runs([_run("eager", 2.0), _run("sdpa", 1.0), _run("flex", 1.03)])
    assert [r.implementation for r in best] == ["sdpa", "flex"]  # 3% apart: within 5%
    assert [r.implementation for r in slower] == ["eager"]


def test_model_runs_with_rounds_follow_their_verdicts() -> None:
    runs = [_run("sdpa", 1.0, Versus(fastest="sdpa", verdict="fastest", rank=1, ratio=1.0)),
            _run("eager", 1.5, Versus(fastest="sdpa", verdict="slower", rank=3, ratio=1.5)),
            _run("flex", 1.2, Versus(fastest="sdpa", verdict="slower", rank=2, ratio=1.2))]
    best, slower = _fastest_runs(runs)
    assert [r.implementation for r in best] == ["sdpa"]
    assert [r.implementation for r in slower] == ["flex", "eager"]  # the slowest last


def test_a_saved_comparison_names_its_fastest_and_a_twin_as_a_tie() -> None:
    record = load_record(RECORDS / "compare-v2.json")
    assert isinstance(record, CompareRecord)
    headline = record.headline()
    assert headline.startswith("sdpa is fastest at ") and "faster than naive" in headline
    sdpa, naive = record.result("sdpa"), record.result("naive")
    twin = msgspec.structs.replace(sdpa, variant="twin")
    assert rows_headline([naive, sdpa, twin]).startswith(
        "sdpa and twin tie for fastest (within noise)")
