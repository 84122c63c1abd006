"""Record diffs on real records: rows matched by variant, failures as states of their
own, environment and workload changes listed first, the CI gate's verdicts."""

from __future__ import annotations

import msgspec
import pytest

from attnprof.analysis.diff import diff_records
from attnprof.analysis.diff.gate import regressions
from attnprof.errors import UsageError
from attnprof.record.compare import CompareRecord, Latency
from attnprof.record.diff import DiffSide

SIDES = (DiffSide(ref="old", kind="compare"), DiffSide(ref="new", kind="compare"))


def _scaled(latency: Latency | None, factor: float) -> Latency | None:
    if latency is None:
        return None
    return msgspec.structs.replace(latency, samples=[s * factor for s in latency.samples],
                                   median=latency.median * factor)


def _many(latency: Latency | None) -> Latency:
    """40 samples spread 2% around the row's measured median (the tiny fixture run keeps
    only a few): enough for the test to see a 40% shift."""
    import random

    assert latency is not None
    rng = random.Random(0)
    samples = [latency.median * rng.gauss(1.0, 0.02) for _ in range(40)]
    return msgspec.structs.replace(latency, samples=samples, count=40)


def test_states_and_gate(records_by_kind: dict[str, object]) -> None:
    old = records_by_kind["compare"]
    assert isinstance(old, CompareRecord)
    rows = {r.variant: r for r in old.results}
    naive, sdpa = rows["naive"], rows["sdpa"]
    assert naive.status == "ok" and sdpa.status == "ok"
    naive = msgspec.structs.replace(naive, latency_ms=_many(naive.latency_ms))
    old = msgspec.structs.replace(old, results=[naive, *old.results[1:]])
    new = msgspec.structs.replace(old, results=[
        # 40% slower: every sample of the same run, scaled — a shift the test must see, and
        # beyond what one process a side leaves unjudged (ONE_PROCESS_FLOOR).
        msgspec.structs.replace(naive, latency_ms=_scaled(naive.latency_ms, 1.40)),
        msgspec.structs.replace(sdpa, status="oom", reason="out of memory", latency_ms=None),
        *[r for r in old.results if r.variant not in ("naive", "sdpa")],
    ])
    new.workload = msgspec.structs.replace(old.workload, seq=64)
    diff = diff_records(old, new, *SIDES)
    by_variant = {r.key["variant"]: r for r in diff.rows}
    latency = by_variant["naive"].metric("latency_ms")
    assert latency is not None and latency.significant and latency.worse
    assert by_variant["sdpa"].state == "broken" and by_variant["sdpa"].new_status == "oom"
    assert any(c.scope == "workload" and c.what == "seq" for c in diff.changes)
    assert any("workloads differ" in w for w in diff.warnings)
    found = regressions(diff, 5.0)
    assert {str(r.key["variant"]) for r, _ in found} == {"naive", "sdpa"}
    assert regressions(diff, 50.0) == [(by_variant["sdpa"], None)]  # 40% < 50%: only the break

    fixed = diff_records(new, old, *SIDES)  # the other way round: faster, and fixed
    assert {r.key["variant"]: r.state for r in fixed.rows}["sdpa"] == "fixed"
    assert regressions(fixed, 5.0) == []


def test_added_and_removed_rows(records_by_kind: dict[str, object]) -> None:
    old = records_by_kind["compare"]
    assert isinstance(old, CompareRecord)
    new = msgspec.structs.replace(old, results=old.results[1:])
    diff = diff_records(old, new, *SIDES)
    assert diff.rows[0].state == "removed"
    assert diff_records(new, old, *SIDES).rows[-1].state == "added"


def test_unchanged_record_is_all_tilde(records_by_kind: dict[str, object]) -> None:
    old = records_by_kind["compare"]
    diff = diff_records(old, old, *SIDES)  # type: ignore[arg-type]
    assert diff.changes == []
    assert all(m.significant is False for r in diff.rows for m in r.metrics
               if m.significant is not None)
    assert regressions(diff, 0.0) == []


def test_sweep_and_model_rows(records_by_kind: dict[str, object]) -> None:
    sweep = records_by_kind["sweep"]
    diff = diff_records(sweep, sweep, DiffSide(ref="a", kind="sweep"),  # type: ignore[arg-type]
                        DiffSide(ref="b", kind="sweep"))
    assert {tuple(r.key) for r in diff.rows} == {("mode", "seq", "variant")}
    assert {r.state for r in diff.rows} <= {"compared", "failing"}
    model = records_by_kind["model"]
    diff = diff_records(model, model, DiffSide(ref="a", kind="model"),  # type: ignore[arg-type]
                        DiffSide(ref="b", kind="model"))
    keys = {tuple(r.key) for r in diff.rows}
    assert ("implementation", "phase") in keys and ("implementation", "phase", "layer") in keys


def test_records_of_different_kinds(records_by_kind: dict[str, object]) -> None:
    with pytest.raises(UsageError, match=r"'compare' record and .* 'sweep' record"):
        diff_records(records_by_kind["compare"], records_by_kind["sweep"],  # type: ignore[arg-type]
                     DiffSide(ref="a", kind="compare"), DiffSide(ref="b", kind="sweep"))
    # A profile is a comparison with traces: they diff.
    diff = diff_records(records_by_kind["compare"], records_by_kind["profile"],  # type: ignore[arg-type]
                        DiffSide(ref="a", kind="compare"), DiffSide(ref="b", kind="profile"))
    assert diff.rows


def test_every_row_moving_together_is_said_to_be_the_machine(
        records_by_kind: dict[str, object]) -> None:
    """bench_diff_noise.py found unchanged code flagged in 54% of rows: a fresh process ran
    every variant faster or slower together. The diff says so when every row moved one way."""
    old = records_by_kind["compare"]
    assert isinstance(old, CompareRecord)
    ok = [msgspec.structs.replace(r, latency_ms=_many(r.latency_ms))
          for r in old.results if r.status == "ok"]
    assert len(ok) >= 2
    old = msgspec.structs.replace(old, results=ok)
    slower = msgspec.structs.replace(old, results=[
        msgspec.structs.replace(r, latency_ms=_scaled(r.latency_ms, 1.0 + 0.08 + 0.04 * i))
        for i, r in enumerate(ok)])
    diff = diff_records(old, slower, *SIDES)
    (said,) = [w for w in diff.warnings if "moved the same way" in w]
    assert "(+8% … +" in said and "compare --variants OLD,NEW" in said
    # One row slower, the rest as they were: a change of the code, not of the machine.
    one = msgspec.structs.replace(old, results=[
        msgspec.structs.replace(ok[0], latency_ms=_scaled(ok[0].latency_ms, 1.25)), *ok[1:]])
    assert not any("moved the same way" in w for w in diff_records(old, one, *SIDES).warnings)
