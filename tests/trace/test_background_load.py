"""A trace read in a background thread (``attnprof analyze`` starts it before importing the
analysis) is the trace :func:`load_trace` reads, and fails as it fails."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from attnprof.errors import UsageError
from attnprof.trace import load_trace
from attnprof.trace.background import BackgroundLoad


@pytest.mark.parametrize("name", ["v100_training_large.json.gz", "cpu_only.json.gz"])
def test_background_load_is_load_trace(public_traces: Path, name: str,
                                       assert_same_trace: Any) -> None:
    path = public_traces / name
    assert_same_trace(BackgroundLoad(path).result(), load_trace(path))


def test_background_load_raises_what_load_trace_raises(tmp_path: Path) -> None:
    broken = tmp_path / "cut.json.gz"
    broken.write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1')[:-9])
    with pytest.raises(UsageError) as direct:
        load_trace(broken)
    loading = BackgroundLoad(broken)
    with pytest.raises(UsageError) as background:
        loading.result()
    assert str(background.value) == str(direct.value)


def test_background_load_passes_options(public_traces: Path) -> None:
    trace = BackgroundLoad(public_traces / "cpu_only.json.gz", side_tables=False).result()
    assert trace.meta == load_trace(public_traces / "cpu_only.json.gz", side_tables=False).meta
