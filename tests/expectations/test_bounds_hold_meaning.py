"""Bounds that cannot fail, or cannot hold, are refused (issue 11, item 5).

Before, ``max = nan`` or ``max = inf`` in an expectations file always passed (``x > nan``
and ``x > inf`` are false), and ``count = 1`` with ``min = 3`` was accepted though no
count can meet both. Each is now exit status 2 with one line naming the key.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.errors import UsageError
from attnprof.workload.expectations import load_expectations


@pytest.mark.parametrize(("text", "needle"), [
    ("[per_forward]\nkernels = { max = nan }\n",
     "per_forward.kernels max must be a finite number, got nan"),
    ("[per_forward]\nlatency_ms = { max = inf }\n",
     "per_forward.latency_ms max must be a finite number, got inf"),
    ("[per_forward]\npeak_memory_mib = { min = -inf }\n",
     "per_forward.peak_memory_mib min must be a finite number, got -inf"),
    ("[[kernel]]\nmatch = 'flash'\ncount = nan\n",
     "kernel #1 count must be a finite number, got nan"),
    ("[[op]]\nmatch = 'aten::mm'\ncount = 1\nmin = 3\n",
     "op #1 count 1 is outside its own range ≥ 3"),
    ("[[kernel]]\nmatch = 'x'\ncount = 5\nmin = 1\nmax = 2\n",
     "kernel #1 count 5 is outside its own range 1 … 2"),
])
def test_bounds_that_always_pass_or_never_hold_are_refused(text: str, needle: str,
                                                           tmp_path: Path) -> None:
    path = tmp_path / "expect.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as caught:
        load_expectations(path)
    assert needle in str(caught.value)


def test_a_nan_gate_fails_the_command_in_one_line(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "expect.toml"
    path.write_text("[per_forward]\nkernels = { max = nan }\n")
    assert main(["check", "--expect", str(path), "naive"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "per_forward.kernels max must be a finite number" in line


def test_a_consistent_count_with_a_range_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "expect.toml"
    path.write_text("[[kernel]]\nmatch = 'x'\ncount = 2\nmin = 1\nmax = 3\n")
    assert load_expectations(path).kernel[0].count == 2
