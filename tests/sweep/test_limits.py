"""Memory ceilings found by bisection on real runs in capped workers."""

from __future__ import annotations

import math

import pytest

from attnprof.cli.main import main
from attnprof.run.limits import analytic_ceiling, find_ceiling, probe_budget, search_range
from attnprof.spec.workload import Workload
from attnprof.variants import get_variant

GiB = 1 << 30
BASE = Workload(batch=1, heads=2, kv_heads=2, seq=1024, head_dim=16).validate()


def test_search_range_ends_where_the_inputs_alone_exceed_the_budget() -> None:
    low, high, known = search_range(BASE, "seq", GiB, 1024, None)
    # q, k, v and out: 4 × 1·2·S·16·4 B = 512·S bytes ≤ 1 GiB up to S = 2 Mi.
    assert (low, known) == (1024, True) and high == 2 * 1024 * 1024 + 1024
    assert search_range(BASE, "seq", GiB, 1024, 8192) == (1024, 8192, False)
    assert probe_budget(1024, 8192, 1024) == math.ceil(math.log2(7)) + 2


def test_flash_fits_a_longer_sequence_than_naive_in_one_gib(capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    step, top = 2048, 8192
    naive = find_ceiling(BASE, get_variant("naive"), "seq", GiB, step=step, maximum=top,
                         probe_timeout_s=120)
    flash = find_ceiling(BASE, get_variant("sdpa-flash"), "seq", GiB, step=step, maximum=top,
                         probe_timeout_s=120)
    assert naive.largest is not None and flash.largest is not None
    assert flash.largest > naive.largest
    for c in (naive, flash):
        # Confirmed by a real measured run at the size found, within the probe budget.
        assert c.confirmed is not None and c.confirmed.status == "ok"
        assert c.confirmed.latency_ms is not None and c.confirmed.peak_memory_bytes
        assert c.probes[-1].size == c.largest
        assert len(c.probes) <= probe_budget(step, top, step)
    # naive: the next size ran out of memory in its capped worker.
    assert naive.first_failure is not None and naive.first_failure.status == "oom"
    assert naive.first_failure.size == naive.largest + step  # type: ignore[operator]
    # The textbook estimate (one score matrix) is too optimistic for naive: it says by how much.
    assert naive.analytic is not None and naive.analytic_ratio is not None
    assert naive.analytic == analytic_ceiling(BASE, get_variant("naive"), "seq", GiB, step)
    assert naive.analytic_ratio > 1


def test_limits_command_refuses_bad_flags(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in (
            (["--variants", "naive", "--seq", "64"], "--seq is what limits searches"),
            (["--variants", "naive", "--memory-budget", "lots"], "--memory-budget 'lots'"),
            (["--variants", "naive", "--step", "0"], "--step must be a positive integer"),
            (["--variants", "nope"], "unknown variant 'nope'")):
        assert main(["limits", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and "\n" not in err
