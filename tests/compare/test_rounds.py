"""Interleaved timing: every variant is warmed up first, then sampled a slice per round."""

from __future__ import annotations

import sys
from itertools import groupby
from pathlib import Path

import pytest

from attnprof.measure.timer import round_sizes
from attnprof.run.compare import compare
from attnprof.workload.settings import Settings, TimingPlan

RECORDING = '''
import signal

import torch.nn.functional as F

CALLS = []


def _sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal,
                                          scale=scale, enable_gqa=enable_gqa)


def first(q, k, v, **kwargs):
    CALLS.append("first")
    return _sdpa(q, k, v, **kwargs)


def second(q, k, v, **kwargs):
    CALLS.append("second")
    return _sdpa(q, k, v, **kwargs)


def third(q, k, v, **kwargs):
    CALLS.append("third")
    return _sdpa(q, k, v, **kwargs)


def stopped_in_round_two(q, k, v, **kwargs):
    CALLS.append("stopped")
    # 2 calls warming up, then 3 per round (an untimed call and 2 samples): call 6 is the
    # first of round two. A real stop signal (SIGTERM: a test run in the background of a
    # script may have SIGINT ignored), as `docker stop` sends it.
    if CALLS.count("stopped") == 6:
        signal.raise_signal(signal.SIGTERM)
    return _sdpa(q, k, v, **kwargs)


def failing_late(q, k, v, **kwargs):
    CALLS.append("failing_late")
    if len([c for c in CALLS if c == "failing_late"]) > 3:  # after its warm-up
        raise RuntimeError("broke while being timed")
    return _sdpa(q, k, v, **kwargs)
'''

TINY = {"batch": 1, "heads": 2, "kv_heads": 2, "seq": 16, "head_dim": 8, "device": "cpu"}


@pytest.mark.parametrize(("n", "rounds", "sizes"), [
    (10, 5, [2, 2, 2, 2, 2]),
    (11, 5, [3, 2, 2, 2, 2]),
    (3, 5, [1, 1, 1]),  # never an empty round
    (7, 1, [7]),
])
def test_samples_are_split_evenly_over_rounds(n: int, rounds: int, sizes: list[int]) -> None:
    assert round_sizes(n, rounds) == sizes
    assert sum(sizes) == n


#: Six samples in three rounds of two, one warm-up call: calls can be counted exactly.
THREE_ROUNDS = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.0, min_samples=6,
                                        max_samples=6, min_warmup_calls=1, rounds=3),
                        measure_memory=False, check_accuracy=False, measure_ceilings=False)


def _recording(tmp_path: Path, *names: str) -> tuple[Path, list[str]]:
    """The recording module written to ``tmp_path``, and variant specs for ``names``."""
    path = tmp_path / "recording.py"
    path.write_text(RECORDING)
    return path, [f"{path}:{name}" for name in names]


def _calls_of(path: Path) -> list[str]:
    # Both variants come from one file, so they share its module (and its CALLS).
    (module,) = [m for m in list(sys.modules.values())
                 if getattr(m, "__file__", None) == str(path)]
    return list(module.CALLS)


def test_variants_are_timed_in_alternating_rounds(tmp_path: Path) -> None:
    path, specs = _recording(tmp_path, "first", "second")
    record = compare(variants=specs, settings=THREE_ROUNDS, **TINY)
    assert [r.status for r in record.results] == ["ok", "ok"]
    assert [r.latency_ms.count for r in record.results] == [6, 6]
    blocks = [(name, len(list(run))) for name, run in groupby(_calls_of(path))]
    # Both warm up (first call + one warm-up call) before either is timed; then three
    # rounds of one untimed call and two samples each, alternating, each round starting
    # one variant further on (so the second's slices of rounds one and two run together).
    assert blocks == [("first", 2), ("second", 2), ("first", 3), ("second", 6), ("first", 6),
                      ("second", 3)]


def test_each_variant_takes_each_place_in_the_rounds(tmp_path: Path) -> None:
    path, specs = _recording(tmp_path, "first", "second", "third")
    compare(variants=specs, settings=THREE_ROUNDS, **TINY)
    timed = _calls_of(path)[6:]  # after the three warm-ups of two calls
    order = [name for name, _ in groupby(timed)]
    assert order == ["first", "second", "third", "second", "third", "first", "third",
                     "first", "second"][:len(order)]
    assert len(timed) == 3 * 3 * 3


def test_a_variant_failing_in_a_round_is_an_error_row_and_the_rest_go_on(
        tmp_path: Path) -> None:
    _, specs = _recording(tmp_path, "failing_late", "second")
    failed, ok = compare(variants=specs, settings=THREE_ROUNDS, **TINY).results
    assert failed.status == "error" and "broke while being timed" in (failed.reason or "")
    assert ok.status == "ok" and ok.latency_ms.count == 6


def test_ctrl_c_during_the_rounds_keeps_the_samples_taken(tmp_path: Path) -> None:
    _, specs = _recording(tmp_path, "second", "stopped_in_round_two")
    saved = []
    with pytest.raises(KeyboardInterrupt):
        compare(variants=specs, settings=THREE_ROUNDS, on_result=saved.append, **TINY)
    (record,) = saved
    assert record.status == "partial"
    second, stopped = record.results
    # Round one finished for both; round two starts with the stopped one (each round starts
    # one variant further on), so neither has more.
    assert (second.status, second.latency_ms.count) == ("ok", 2)
    assert (stopped.status, stopped.latency_ms.count) == ("ok", 2)
    assert any("interrupted: 2 of 6 samples" in n for n in stopped.notes)
    assert stopped.max_abs_error is None and stopped.peak_memory_bytes is None


def test_the_one_timing_loop_rotates_who_starts_and_stops_when_asked() -> None:
    from attnprof.measure.timer import interleaved_rounds

    taken: list[tuple[int, int, int]] = []

    def take(i: int, r: int, n: int) -> bool:
        taken.append((i, r, n))
        return False

    # Three contenders (the third has one round fewer); round r starts with contender r.
    assert not interleaved_rounds([[2, 2, 1], [2, 2, 1], [3, 2]], take)
    assert taken == [(0, 0, 2), (1, 0, 2), (2, 0, 3), (1, 1, 2), (2, 1, 2), (0, 1, 2),
                     (0, 2, 1), (1, 2, 1)]
    # A contender that asks to stop ends the rounds there.
    taken.clear()
    assert interleaved_rounds([[1, 1], [1, 1]], lambda i, r, n: taken.append((i, r)) or r == 1)
    assert taken == [(0, 0), (1, 0), (1, 1)]
