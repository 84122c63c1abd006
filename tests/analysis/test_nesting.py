"""The op nesting found by counting open ops is the stack sweep's, op for op; where it cannot
prove that (a child outliving its parent), the sweep decides."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnprof.analysis.index import nesting
from attnprof.analysis.index.op_index import index_cpu_ops
from attnprof.record.compare import RunRecord
from attnprof.trace import load_trace


def _both(pid: np.ndarray, tid: np.ndarray, start: np.ndarray, end: np.ndarray
          ) -> tuple[Any, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    cut = np.flatnonzero((pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1])) + 1
    bounds = np.r_[0, cut, len(start)]
    return nesting._by_depth(start, end, bounds), nesting._swept(start, end, bounds)


def _sorted(pid: list[int], tid: list[int], ts: list[float], dur: list[float]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    p, t, s, d = (np.array(x) for x in (pid, tid, ts, dur))
    order = np.lexsort((-d, s, t, p))
    return p[order], t[order], s[order], s[order] + d[order]


def _same(found: Any, swept: tuple[np.ndarray, ...]) -> None:
    for a, b in zip(found, swept, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("variant", ["naive", "sdpa-math", "flex-eager"])
def test_real_captures_take_the_fast_path(cpu_record: RunRecord, variant: str) -> None:
    ops = index_cpu_ops(load_trace(cpu_record.result(variant).trace))
    found, swept = _both(ops.pid, ops.tid, ops.start, ops.end)
    assert found is not None
    _same(found, swept)


def test_public_traces_take_the_fast_path(public_traces: Path) -> None:
    for path in sorted(public_traces.glob("*.json.gz")):
        ops = index_cpu_ops(load_trace(path))
        if len(ops):
            found, swept = _both(ops.pid, ops.tid, ops.start, ops.end)
            assert found is not None, path.name
            _same(found, swept)


def test_random_trees_with_ties_and_empty_ops() -> None:
    rng = random.Random(7)

    def grow(lo: float, hi: float, depth: int, out: list[tuple[float, float]]) -> None:
        t = lo
        while t < hi and depth < 6 and rng.random() < 0.7:
            a = t + rng.choice([0, 0, 1])
            b = min(hi, a + rng.choice([0, 1, 2, 5]))
            out.append((a, b - a))
            grow(a, b, depth + 1, out)
            t = b

    for _ in range(300):
        spans: list[tuple[float, float]] = []
        grow(0, 100, 0, spans)
        n = len(spans)
        if not n:
            continue
        tid = [rng.choice([1, 2]) for _ in range(n)]
        p, t, s, e = _sorted([1] * n, tid, [a for a, _ in spans], [d for _, d in spans])
        found, swept = _both(p, t, s, e)
        if found is not None:  # splitting a tree across threads may break it: then swept
            _same(found, swept)


def test_anything_else_is_either_proved_or_swept() -> None:
    rng = random.Random(11)
    proved = 0
    for _ in range(500):
        n = rng.randint(1, 40)
        p, t, s, e = _sorted([rng.choice([1, 2]) for _ in range(n)], [1] * n,
                             [rng.choice([0, 1, 2, 3, 5, 8]) + rng.choice([0, 0.5])
                              for _ in range(n)],
                             [rng.choice([0, 0, 0.5, 1, 2, 3, 10]) for _ in range(n)])
        found, swept = _both(p, t, s, e)
        if found is not None:
            proved += 1
            _same(found, swept)
        result = nesting.nest(p, np.ones(n, dtype=np.int64), s, e)
        _same((result.parent, result.last, result.depth), swept)
    assert proved > 0


def test_a_child_outliving_its_parent_is_swept() -> None:
    # B starts inside A but ends after it: the sweep still nests B (and C) under A.
    p, t, s, e = _sorted([1, 1, 1], [1, 1, 1], [0, 5, 12], [10, 10, 2])
    found, swept = _both(p, t, s, e)
    assert found is None
    result = nesting.nest(p, t, s, e)
    assert result.parent.tolist() == swept[0].tolist() == [-1, 0, 1]


def test_the_op_order_is_lexsorts() -> None:
    from attnprof.analysis.index.op_index import _thread_time_order

    rng = np.random.default_rng(5)
    for size in (0, 1, 7, 500):
        pid = rng.integers(0, 3, size)
        tid = rng.integers(0, 3, size)
        ts = np.sort(rng.integers(0, 40, size)).astype(float)  # in file order, with ties
        if size > 7:
            ts[rng.integers(0, size, 20)] = 3.0  # and some out of order
        dur = rng.integers(0, 5, size).astype(float)
        assert np.array_equal(_thread_time_order(pid, tid, ts, dur),
                              np.lexsort((-dur, ts, tid, pid)))
