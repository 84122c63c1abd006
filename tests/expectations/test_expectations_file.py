"""Parsing expectations files: the documented format loads; every mistake is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.errors import UsageError
from attnprof.workload.expectations import Bound, load_expectations

GOOD = '''
title = "flash attention is one fused kernel"
region = "sdpa-flash"

[per_forward]
kernels = { max = 1 }
latency_ms = { max = 2.5 }
peak_memory_mib = { min = 0, max = 64 }
attention_share = { min = 0.9 }

[[kernel]]
match = "flash"
count = 1

[[kernel]]
match = "Memcpy|copy"
max = 0

[[op]]
match = "aten::_safe_softmax"
count = 0
'''


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "expect.toml"
    path.write_text(text)
    return path


def test_documented_format_loads(tmp_path: Path) -> None:
    exp = load_expectations(write(tmp_path, GOOD))
    assert exp.title == "flash attention is one fused kernel"
    assert exp.region == "sdpa-flash"
    assert exp.per_forward.kernels == Bound(max=1)
    assert exp.per_forward.latency_ms.max == 2.5
    assert exp.per_forward.attention_share == Bound(min=0.9)
    assert [k.match for k in exp.kernel] == ["flash", "Memcpy|copy"]
    assert exp.kernel[0].count == 1 and exp.kernel[1].max == 0
    assert exp.op[0].match == "aten::_safe_softmax"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[[kernel]]\nmatch = 'x'\ncout = 1\n", "unknown field `cout`"),
        ("[[kernel]]\nmatch = 'x'\ncount = 'one'\n", "$.kernel[0].count"),
        ("[[kernel]]\ncount = 1\n", "missing required field `match`"),
        ("[[kernel]]\nmatch = 'x'\n", "kernel #1 has no count, min or max"),
        ("[[op]]\nmatch = 'x'\ncount = -1\n", "op #1 count must not be negative, got -1"),
        ("[[op]]\nmatch = 'x'\nmin = 3\nmax = 1\n", "op #1 has min 3 > max 1"),
        ("[[kernel]]\nmatch = '(unclosed'\ncount = 1\n", "is not a regular expression"),
        ("[per_forward]\nkernel = { max = 1 }\n", "unknown field `kernel`"),
        ("title = 'nothing'\n", "expects nothing"),
        ("[per_forward]\nattention_share = { min = 90 }\n", "a share between 0 and 1"),
        ("[[kernel]\nmatch = 1", "is not valid TOML"),
    ],
)
def test_malformed_files_are_one_line_usage_errors(tmp_path: Path, text: str,
                                                   needle: str) -> None:
    with pytest.raises(UsageError) as info:
        load_expectations(write(tmp_path, text))
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read expectations file"):
        load_expectations(tmp_path / "nope.toml")


@pytest.mark.parametrize(
    ("bound", "value", "holds"),
    [
        (Bound(count=1), 1.0, True), (Bound(count=1), 2.0, False),
        (Bound(max=2), 2.0, True), (Bound(max=2), 2.5, False),
        (Bound(min=1, max=3), 0.5, False), (Bound(min=1, max=3), 3.0, True),
    ],
)
def test_bounds(bound: Bound, value: float, holds: bool) -> None:
    assert bound.holds(value) is holds


def test_bound_descriptions() -> None:
    assert Bound(count=1).describe() == "= 1"
    assert Bound(max=2.5).describe("ms") == "≤ 2.5 ms"
    assert Bound(min=1, max=3).describe() == "1 … 3"
    assert Bound(min=4).describe() == "≥ 4"
