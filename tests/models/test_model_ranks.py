"""``model --attn a,b``: the implementations of a phase are timed in the same interleaved
rounds and the table says whether they tie or which is faster, beyond the noise.

What a timing decides is tested on recorded samples (the machine's load cannot move a
verdict here); the rounds' order and the table's column are tested on real runs. The
ten-run figures (ties on one kernel under two names, a 20% slower implementation
ranked) are ``benchmarks/bench_model_ties.py``'s.
"""

from __future__ import annotations

import random

import pytest
from model_helpers import TINY
from rich.console import Console

from attnprof.measure.stats import summarize
from attnprof.record.model import ModelSettings, PhaseRun
from attnprof.render.model_view import render_model
from attnprof.run.model import profile_model
from attnprof.run.model_ranks import differs_beyond_noise, rank_runs
from attnprof.run.rows import latency
from attnprof.workload.model_spec import ModelSpec
from attnprof.workload.settings import TimingPlan


def _run(impl: str, samples: list[float], rounds: int = 4) -> PhaseRun:
    per = len(samples) // rounds
    medians = [sorted(samples[i * per:(i + 1) * per])[per // 2] for i in range(rounds)]
    return PhaseRun(implementation=impl, phase="prefill", status="ok",
                    latency_ms=latency(summarize(samples), samples), round_medians_ms=medians)


def _samples(seed: int, centre: float, spread: float = 0.02, n: int = 80) -> list[float]:
    rng = random.Random(seed)
    return [centre * (1 + rng.gauss(0, spread)) for _ in range(n)]


def test_the_same_distribution_ties_with_its_p_value() -> None:
    a, b = _run("eager", _samples(20, 10.0)), _run("sdpa", _samples(21, 10.0))
    rank_runs([a, b])
    assert a.latency_ms is not None and b.latency_ms is not None
    fast, slow = (a, b) if a.latency_ms.median <= b.latency_ms.median else (b, a)
    assert fast.versus is not None and fast.versus.verdict == "fastest"
    assert slow.versus is not None and slow.versus.verdict == "tie"
    assert slow.versus.rank == 1 and slow.versus.fastest == fast.implementation
    assert slow.versus.p_value is not None and slow.versus.p_value > 0.05
    assert slow.versus.rounds == 4


def test_a_20_percent_slower_implementation_is_ranked_second() -> None:
    eager, sdpa = _run("eager", _samples(3, 12.0)), _run("sdpa", _samples(4, 10.0))
    rank_runs([eager, sdpa])
    assert sdpa.versus is not None and sdpa.versus.verdict == "fastest"
    assert eager.versus is not None and eager.versus.verdict == "slower"
    assert eager.versus.rank == 2 and eager.versus.fastest == "sdpa"
    assert eager.versus.ratio == pytest.approx(1.2, abs=0.02)
    assert eager.versus.p_value is not None and eager.versus.p_value < 1e-6


def test_a_significant_difference_inside_the_noise_margin_is_a_tie() -> None:
    # 2% apart with tight samples: the test alone calls it (p tiny), the medians do not
    # differ beyond 5%, so it is a tie, and the p-value is still shown.
    a, b = _samples(5, 10.0, spread=0.005, n=200), _samples(6, 10.2, spread=0.005, n=200)
    p, margin, differs = differs_beyond_noise(a, b)
    assert p < 1e-6 and margin == pytest.approx(0.05) and not differs
    fast, slow = _run("sdpa", a), _run("eager", b)
    rank_runs([slow, fast])
    assert slow.versus is not None and slow.versus.verdict == "tie"


def test_runs_timed_alone_or_failed_are_not_ranked() -> None:
    alone = _run("sdpa", _samples(7, 10.0))
    alone.round_medians_ms = None  # timed by itself: nothing to set it against
    failed = PhaseRun(implementation="eager", phase="prefill", status="error", reason="x")
    rank_runs([alone, failed])
    assert alone.versus is None and failed.versus is None


def test_implementations_take_turns_in_every_round_and_the_table_ranks_them() -> None:
    said: list[tuple[str, str]] = []
    settings = ModelSettings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.0, min_samples=3,
                                             max_samples=3, min_warmup_calls=1, rounds=3),
                             trace_steps=1)
    spec = ModelSpec(source="llama", **TINY, implementations=("eager", "sdpa"),
                     phases=("prefill",))
    record = profile_model(spec=spec, settings=settings,
                           progress=lambda name, what: said.append((name, what)))
    slices = [(name.split("/")[0], what.split(",")[1].strip())
              for name, what in said if what.endswith("interleaved")]
    # 2 implementations × labels off and on × 3 rounds, round by round.
    assert len(slices) == 12
    for r in range(3):
        this_round = slices[4 * r:4 * r + 4]
        assert {round_ for _, round_ in this_round} == {f"round {r + 1} of 3"}
        assert sorted(impl for impl, _ in this_round) == ["eager", "eager", "sdpa", "sdpa"]
    for run in record.runs:
        assert run.status == "ok" and run.round_medians_ms is not None
        assert len(run.round_medians_ms) == 3 and run.latency_ms is not None
        assert run.latency_ms.count == 3  # the rounds' samples are the run's latency
        assert run.versus is not None
    assert sorted(r.versus.verdict for r in record.runs if r.versus) in (
        ["fastest", "slower"], ["fastest", "tie"])
    console = Console(record=True, width=240)
    render_model(record, console, top=3)
    text = console.export_text()
    other = next(r.versus for r in record.runs
                 if r.versus is not None and r.versus.verdict != "fastest")
    assert other.p_value is not None
    shown = (f"tie (p={other.p_value:.2g}" if other.verdict == "tie"
             else f"2: {other.ratio:.2f}× {other.fastest} (p={other.p_value:.2g})")
    assert "rank" in text and "1 (fastest)" in text and shown in text
    assert "interleaved rounds, each against the fastest" in text
