"""Ids of any size group correctly: a pid of 4e12 beside a tid of 1 (issue 21 item 12, issue
16 item 21: ``unique_pairs`` raised "pair members too far apart" and analyze crashed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from attnprof.analysis.index.pairs import is_in, unique_ids, unique_pairs
from attnprof.cli.main import main

I64 = np.iinfo(np.int64)


@pytest.mark.parametrize("a, b", [
    ([4_000_000_000_000, 1, 4_000_000_000_000, 7], [1, 4_000_000_000_000, 1, -5]),
    ([I64.max, I64.min, 0, I64.max], [I64.min, I64.max, 0, I64.min]),
    ([3, 3, 3], [I64.min, I64.max, I64.min]),
])
def test_pairs_of_any_spread_match_numpy(a: list[int], b: list[int]) -> None:
    a_arr, b_arr = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    found = unique_pairs(a_arr, b_arr)
    both = np.stack([a_arr, b_arr])
    keys, index, inverse, counts = np.unique(both, axis=1, return_index=True,
                                             return_inverse=True, return_counts=True)
    assert found.first.tolist() == keys[0].tolist()
    assert found.second.tolist() == keys[1].tolist()
    assert found.index.tolist() == index.tolist()
    assert found.inverse.tolist() == inverse.reshape(-1).tolist()
    assert found.counts.tolist() == counts.tolist()


def test_ids_spanning_all_of_int64_match_numpy() -> None:
    values = np.array([I64.max, I64.min, 5, I64.max, I64.min], dtype=np.int64)
    found = unique_ids(values)
    keys, index, inverse, counts = np.unique(values, return_index=True, return_inverse=True,
                                             return_counts=True)
    assert found.first.tolist() == keys.tolist()
    assert found.index.tolist() == index.tolist()
    assert found.inverse.tolist() == inverse.tolist()
    assert found.counts.tolist() == counts.tolist()
    assert found.second.tolist() == [0, 0, 0]


@pytest.mark.parametrize("values, test", [
    ([5, -1, 7, 7, 0, I64.max, I64.min], [7, I64.min, 3, 7, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]),
    ([1, 2, 3], []),
    ([], [1, 2]),
    ([9, 10, 11], list(range(10))),  # every value past the last test value
    ([-3, -2], list(range(100))),  # and before the first
])
def test_is_in_is_numpys_isin(values: list[int], test: list[int]) -> None:
    for dtype in (np.int64, np.int32):
        a = np.array([v for v in values if np.iinfo(dtype).min <= v <= np.iinfo(dtype).max],
                     dtype=dtype)
        t = np.array(test, dtype=np.int64)
        assert is_in(a, t).tolist() == np.isin(a, t).tolist()
        assert is_in(a, test).tolist() == np.isin(a, test).tolist()


@pytest.mark.parametrize("pid", [4_000_000_000_000, I64.max, I64.min])
def test_a_sync_event_with_a_huge_pid_is_analysed(tmp_path: Path, pid: int,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    tid = 140_000_000_000_000  # Linux thread ids as kineto writes them
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": tid, "ts": 0,
         "dur": 10},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": pid,
         "tid": tid, "ts": 2, "dur": 3},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1,
         "tid": 1, "ts": 5, "dur": 1},
    ]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    assert main(["analyze", str(trace), "--json", str(tmp_path / "out.json")]) == 0
    out = capsys.readouterr().out
    assert "aten::mm" in out
