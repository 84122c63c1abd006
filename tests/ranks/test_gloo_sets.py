"""Issue 20, acceptance 1 and 2 on CPU: a tiny attention model trained with DDP over gloo
(``gloo_job.py``, made once per session), one trace per rank.

The planted straggler (rank 1 sleeps 100 ms inside every step) is named with its extra
time per step; the planted divergence (rank 2 on the math SDPA backend) names the rank and
the op; a clean set raises neither. Per-rank figures equal the raw sums of each trace.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from attnprof.commands.analyze import AnalyzeRequest
from attnprof.commands.analyze import run as analyze
from attnprof.record.ranks import RanksRecord

#: The sleep the job plants in rank 1's steps (gloo_job.py's default).
PLANTED_US = 100_000.0


def _read(folder: Path, **options: Any) -> RanksRecord:
    paths = tuple(sorted(str(p) for p in folder.iterdir()))
    record = analyze(AnalyzeRequest(paths=paths, **options))
    assert isinstance(record, RanksRecord)
    return record


@pytest.fixture(scope="module")
def read_sets(gloo_sets: dict[str, Path]) -> dict[str, RanksRecord]:
    return {name: _read(folder) for name, folder in gloo_sets.items()}


def test_every_set_is_three_ranks_of_three_with_their_steps(
        read_sets: dict[str, RanksRecord]) -> None:
    for record in read_sets.values():
        assert record.world_size == 3 and [r.rank for r in record.ranks] == [0, 1, 2]
        assert record.status == "complete" and not record.unreadable
        for r in record.ranks:
            assert r.rank_from == "distributedInfo" and r.backend == "gloo"
            assert r.device == "cpu" and r.kernel_source == "cpu-ops"
            assert [s.step for s in r.steps] == [1, 2, 3, 4]
            # DDP's gradient all-reduce: one gloo collective per step at least.
            assert all(s.collectives >= 1 and s.collective_us > 0 for s in r.steps)
            assert r.attention_share is not None and 0 < r.attention_share <= 1


def test_the_planted_straggler_is_named_with_its_extra_time_per_step(
        read_sets: dict[str, RanksRecord]) -> None:
    record = read_sets["straggler"]
    assert [s.straggler for s in record.steps] == [1, 1, 1, 1]
    found = [f for f in record.findings if f.rule == "straggler"]
    assert len(found) == 1
    finding = found[0]
    assert finding.data["rank"] == 1 and finding.data["steps"] == 4
    assert "rank 1" in finding.title
    # The others wait about the planted sleep for it in every step: the evidence says how
    # long, step by step (a loaded machine stretches it, never by half).
    extra = finding.data["extra_us_per_step"]
    assert 0.5 * PLANTED_US < extra < 1.5 * PLANTED_US
    for step in record.steps:
        assert 0.5 * PLANTED_US < step.extra_us < 1.5 * PLANTED_US
        assert f"step {step.step}: rank 1" in " ".join(finding.evidence)
    assert not [f for f in record.findings if f.rule == "rank-divergence"]


def test_the_planted_divergence_names_the_rank_and_the_op(
        read_sets: dict[str, RanksRecord]) -> None:
    record = read_sets["divergent"]
    found = [f for f in record.findings if f.rule == "rank-divergence"]
    assert len(found) == 1
    finding = found[0]
    assert finding.severity == "critical"
    assert finding.data["ranks"] == [2] and finding.data["reference"] == [0, 1]
    assert finding.title.startswith("rank 2 ")
    said = finding.evidence[0]
    assert said.startswith("rank 2 ran aten::_scaled_dot_product_attention_math")
    assert "ranks 0, 1 ran aten::_scaled_dot_product_flash_attention_for_cpu" in said
    assert record.rank(2).sdpa_backend == "math"
    assert {record.rank(r).sdpa_backend for r in (0, 1)} == {"flash (CPU)"}
    # The math path's extra ops are the same finding's evidence, not a second alarm.
    assert not [f for f in record.findings if f.rule == "kernel-count"]
    # The math path is slower: on a quiet machine rank 2 may well be everyone's straggler
    # too, and no other rank may be.
    assert [f.data["rank"] for f in record.findings if f.rule == "straggler"] in ([], [2])


def test_a_clean_set_raises_neither(read_sets: dict[str, RanksRecord]) -> None:
    record = read_sets["clean"]
    assert record.findings == []
    assert len(record.steps) == 4  # a straggler per step is still shown, just not called


def test_per_rank_figures_are_the_raw_sums_of_each_trace(
        read_sets: dict[str, RanksRecord], gloo_sets: dict[str, Path]) -> None:
    for name, record in read_sets.items():
        for r in record.ranks:
            raw = _raw(gloo_sets[name] / f"rank-{r.rank}.json.gz")
            assert r.events == len(raw)
            # A CPU-only trace: no device events at all, and the summary says so exactly.
            assert [(d.count, d.total_us) for d in r.device_totals] == [(0, 0.0)] * 4
            steps = sorted((e for e in raw if e.get("name", "").startswith("ProfilerStep#")),
                           key=lambda e: e["ts"])
            # A step ends where it ends, or at the trace's last recorded op if that is
            # earlier (the last step marker stays open until the profiler stops).
            horizon = max(e["ts"] + e["dur"] for e in raw if e.get("ph") == "X"
                          and e.get("cat") not in ("user_annotation", "Trace"))
            for step, event in zip(r.steps, steps, strict=True):
                assert step.step == int(event["name"].rpartition("#")[2])
                end = min(event["ts"] + event["dur"], horizon)
                # Timestamps are ns on an epoch-scale µs axis: equal to the nanosecond.
                assert math.isclose(step.dur_us, end - event["ts"], rel_tol=0, abs_tol=2e-3)
                inside = [e["dur"] for e in raw if e.get("cat") == "user_annotation"
                          and e["name"].startswith("gloo:")
                          and event["ts"] <= e["ts"] < event["ts"] + event["dur"]]
                assert step.collectives == len(inside)
                assert math.isclose(step.collective_us, math.fsum(inside), rel_tol=1e-12)


def _raw(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path) as fh:
        events: list[dict[str, Any]] = json.load(fh)["traceEvents"]
    return [e for e in events if e.get("ph") != "M"]


def test_the_inline_executor_gives_the_same_record(read_sets: dict[str, RanksRecord],
                                                   gloo_sets: dict[str, Path]) -> None:
    inline = _read(gloo_sets["divergent"], executor="inline")
    assert inline.executor == "inline" and inline.workers == 1
    assert inline.ranks == read_sets["divergent"].ranks
    assert inline.findings == read_sets["divergent"].findings


def test_a_rank_reads_the_same_without_the_side_tables(gloo_sets: dict[str, Path],
                                                       public_traces: Path) -> None:
    """A rank is read without its kernel launch configurations and memory records (a
    seventh of reading it): its summary uses neither, so it is the summary of the whole
    trace, on a CPU (gloo) and on a GPU (the public NCCL ranks)."""
    from attnprof.analysis.ranks.identify import identify_rank_set
    from attnprof.analysis.ranks.summary import read_rank, summarize_rank
    from attnprof.trace import load_trace

    sampled = public_traces / "sampled_ranks"
    folders = [*gloo_sets.values(), *([sampled] if sampled.is_dir() else [])]
    launches = 0
    for folder in folders:
        found = identify_rank_set(sorted(str(p) for p in folder.iterdir()))
        assert found.is_set
        for job in found.files:
            whole = load_trace(job.path)
            launches += int((whole.events.launch >= 0).sum())
            assert read_rank(job) == summarize_rank(whole, job), job.path
    assert launches > 0 or not sampled.is_dir()  # the GPU ranks launch kernels
