"""Diffs of comparisons measured in several processes (``--processes``): the process is the
unit, each process's speed is taken out, and what every row shares is said apart.

The process medians are designed (a real record's row, its medians set per process), so
each test knows the truth it checks against: the noise between processes, the speed of
each process, and the one change planted.
"""

from __future__ import annotations

import random

import msgspec
import pytest

from attnprof.analysis.diff import diff_records
from attnprof.analysis.diff.gate import regressions
from attnprof.analysis.diff.processes import MIN_ROWS_FOR_SPEED
from attnprof.record.compare import CompareRecord, VariantResult
from attnprof.record.diff import DiffRecord, DiffSide

SIDES = (DiffSide(ref="old", kind="compare"), DiffSide(ref="new", kind="compare"))
ROWS = ("a", "b", "c", "d", "e")


def _row(template: VariantResult, name: str, medians: list[float]) -> VariantResult:
    """``template`` as variant ``name``, measured in one process per median (each process's
    samples 1% around its median)."""
    assert template.latency_ms is not None
    rng = random.Random(name)
    samples = [m * rng.gauss(1.0, 0.01) for m in medians for _ in range(20)]
    ordered = sorted(samples)
    latency = msgspec.structs.replace(template.latency_ms, samples=samples,
                                      median=ordered[len(ordered) // 2], count=len(samples),
                                      process_medians=list(medians))
    return msgspec.structs.replace(template, variant=name, latency_ms=latency)


def _record(base: CompareRecord, speeds: list[float], *, slower: dict[str, float] | None = None,
            noise: float = 0.02, seed: int = 0, rows: tuple[str, ...] = ROWS
            ) -> CompareRecord:
    """A comparison of ``rows`` (row i takes 1 + i ms) in ``len(speeds)`` processes: process
    p runs every row ``speeds[p]`` times as long, each row moved by its own ``noise``, and
    a row of ``slower`` that much slower still."""
    template = next(r for r in base.results if r.status == "ok")
    rng = random.Random(seed)
    slower = slower or {}
    results = [_row(template, name, [(1.0 + i) * speed * rng.gauss(1.0, noise)
                                     * (1.0 + slower.get(name, 0.0)) for speed in speeds])
               for i, name in enumerate(rows)]
    return msgspec.structs.replace(base, results=results)


def _latencies(diff: DiffRecord) -> dict[str, object]:
    return {str(r.key["variant"]): r.metric("latency_ms") for r in diff.rows}


@pytest.fixture
def base(records_by_kind: dict[str, object]) -> CompareRecord:
    record = records_by_kind["compare"]
    assert isinstance(record, CompareRecord)
    return record


def test_processes_that_ran_slower_together_are_not_a_regression(base: CompareRecord) -> None:
    # Unchanged code; the new run's five processes all ran 20-25% slower (the machine).
    old = _record(base, [1.0, 1.02, 0.99, 1.01, 1.0], seed=1)
    new = _record(base, [1.2, 1.25, 1.22, 1.21, 1.24], seed=2)
    diff = diff_records(old, new, *SIDES)
    for name, m in _latencies(diff).items():
        assert m is not None and m.test == "processes", name  # type: ignore[attr-defined]
        assert m.change > 0.15  # type: ignore[attr-defined]  # the medians moved ...
        assert abs(m.adjusted_change) < 0.05, name  # type: ignore[attr-defined]  # ... the code did not
        assert not m.significant, name  # type: ignore[attr-defined]
    assert regressions(diff, 5.0) == []
    assert any("slower together" in w for w in diff.warnings), diff.warnings


def test_one_row_made_ten_percent_slower_is_found_beside_the_speed(base: CompareRecord) -> None:
    old = _record(base, [1.0, 1.03, 0.98, 1.01, 1.0], seed=3)
    new = _record(base, [0.9, 0.92, 0.88, 0.91, 0.9], slower={"c": 0.10}, seed=4)
    diff = diff_records(old, new, *SIDES)
    found = {str(r.key["variant"]) for r, _ in regressions(diff, 5.0)}
    assert found == {"c"}
    c = _latencies(diff)["c"]
    assert c is not None and 0.05 < c.adjusted_change < 0.15  # type: ignore[attr-defined]
    assert c.change < 0.05  # type: ignore[attr-defined]  # its raw median barely moved
    assert f"processes {5}+{5}" in _render(diff)
    assert "beside speed" in _render(diff)


def test_with_few_rows_no_speed_is_taken_out(base: CompareRecord) -> None:
    rows = ROWS[:MIN_ROWS_FOR_SPEED - 1]
    old = _record(base, [1.0, 1.0, 1.0, 1.0], rows=rows, seed=5)
    new = _record(base, [1.0, 1.0, 1.0, 1.0], rows=rows, slower={"a": 0.3}, seed=6)
    diff = diff_records(old, new, *SIDES)
    a = _latencies(diff)["a"]
    assert a is not None and a.test == "processes"  # type: ignore[attr-defined]
    assert a.adjusted_change is None and a.significant  # type: ignore[attr-defined]


def test_too_few_processes_for_their_noise_say_how_many_would_do(base: CompareRecord) -> None:
    old = _record(base, [1.0, 1.0], noise=0.15, seed=7)
    new = _record(base, [1.0, 1.0], noise=0.15, seed=8)
    diff = diff_records(old, new, *SIDES)
    assert any("processes per side would find 10%" in w for w in diff.warnings), diff.warnings


def test_one_process_a_side_says_its_samples_cannot_see_between_processes(
        base: CompareRecord) -> None:
    # One process a side, the new one 25% slower in every row: its samples call that
    # significant, but every row moving together is the process's speed as much as the
    # code's: not judged, and the diff says what the samples cannot see.
    old = _record(base, [1.0], seed=9)
    new = _record(base, [1.25], seed=10)
    for record in (old, new):
        for r in record.results:
            assert r.latency_ms is not None
            r.latency_ms.process_medians = []
    diff = diff_records(old, new, *SIDES)
    assert all(m.test == "samples" and m.p_value < 0.05  # type: ignore[attr-defined]
               and m.significant is None and m.not_judged == "1 process a side"
               for m in _latencies(diff).values())
    assert any("--processes 5" in w for w in diff.warnings), diff.warnings


def _render(diff: DiffRecord) -> str:
    from attnprof.render import TerminalRenderer

    return TerminalRenderer(width=200).render(diff)
