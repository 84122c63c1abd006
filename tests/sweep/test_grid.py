"""Grid flags: lists and ranges of sizes, names, and one-line errors for every bad form."""

from __future__ import annotations

import pytest

from attnprof.errors import UsageError
from attnprof.workload.grid import MAX_VALUES, Axis, Grid, covers, parse_axis, parse_choices
from attnprof.workload.quantities import parse_bytes, parse_ms, parse_seconds


@pytest.mark.parametrize(("text", "values"), [
    ("256,512,1024", (256, 512, 1024)),
    ("256..8192x2", (256, 512, 1024, 2048, 4096, 8192)),
    ("256..8000x2", (256, 512, 1024, 2048, 4096)),
    ("1..8+1", tuple(range(1, 9))),
    ("1..10+4", (1, 5, 9)),
    ("1024,64..256x2,64", (64, 128, 256, 1024)),  # sorted, distinct
    ("100..400x1.5", (100, 150, 225, 338)),
    ("1_024", (1024,)),
    (" 8 .. 32 x 2 ", (8, 16, 32)),
])
def test_sizes(text: str, values: tuple[int, ...]) -> None:
    assert parse_axis("seq", text) == values


@pytest.mark.parametrize(("text", "message"), [
    ("0..8x2", "--seq '0..8x2': a size must be a positive integer, got 0"),
    ("8..2x2", "the range ends below its start; write 2..8x2"),
    ("8..2x1", "a geometric factor must be a finite number above 1, got 1"),
    ("2..8xinf", "a geometric factor must be a finite number above 1"),
    ("2..8xnan", "a geometric factor must be a finite number above 1"),
    ("2..8", "say how to step from 2 to 8: 2..8x2 (geometric) or 2..8+2"),
    ("2..8+0", "a step must be a positive integer, got 0"),
    ("abc", "'abc' is not a whole number"),
    ("nan", "'nan' is not a whole number"),
    ("1e3", "'1e3' is not a whole number"),
    ("-8", "a size must be a positive integer, got -8"),
    ("256,,512", "an empty value between commas"),
    ("1..100000000+1", f"gives 100000000 values, more than {MAX_VALUES}"),
    ("1..4294967296x2", "larger than any tensor dimension"),
])
def test_bad_sizes_name_the_flag_and_the_fix(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=r"^--seq ") as info:
        parse_axis("seq", text)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_names() -> None:
    assert parse_choices("dtype", "bf16,fp32,bfloat16") == ("bfloat16", "float32")
    assert parse_choices("mode", "forward,decode") == ("forward", "decode")
    with pytest.raises(UsageError, match="--mode 'train' is not a mode"):
        parse_choices("mode", "forward,train")
    with pytest.raises(UsageError, match="unknown dtype 'fp8'"):
        parse_choices("dtype", "fp8")


def test_grid_points_and_size_cap() -> None:
    grid = Grid(axes=[Axis(field="batch", values=[1, 2]), Axis(field="seq", values=[8, 16])])
    assert grid.points() == [{"batch": 1, "seq": 8}, {"batch": 1, "seq": 16},
                             {"batch": 2, "seq": 8}, {"batch": 2, "seq": 16}]
    assert Grid().points() == [{}]
    huge = Grid(axes=[Axis(field=f, values=list(range(1, 100))) for f in ("batch", "seq")])
    with pytest.raises(UsageError, match="the sweep has 9801 points"):
        huge.check_size(1)


def test_covers_is_at_least_as_large_in_every_field() -> None:
    assert covers({"seq": 64, "batch": 2}, {"seq": 32, "batch": 2})
    assert not covers({"seq": 64, "batch": 1}, {"seq": 32, "batch": 2})
    assert covers({"seq": 64, "mode": "forward"}, {"seq": 64, "mode": "forward"})
    assert not covers({"seq": 64, "mode": "decode"}, {"seq": 32, "mode": "forward"})
    assert not covers({"seq": 64}, {"seq": 32, "batch": 1})


def test_quantities() -> None:
    assert parse_bytes("--memory-budget", "8GiB") == 8 << 30
    assert parse_bytes("--memory-budget", "512 MB") == 512 << 20
    assert parse_bytes("--memory-budget", "1.5k") == 1536
    assert parse_ms("--max-latency", "5") == 5.0
    assert parse_ms("--max-latency", "0.5s") == 500.0
    assert parse_ms("--max-latency", "250us") == 0.25
    assert parse_seconds("--point-timeout", "2min") == 120.0
    for bad in ("8 GiBs", "-1GiB", "0", "nan", "inf"):
        with pytest.raises(UsageError, match="--memory-budget"):
            parse_bytes("--memory-budget", bad)
    for bad in ("5 parsecs", "0ms", "1e999s", "nan"):
        with pytest.raises(UsageError, match="--max-latency"):
            parse_ms("--max-latency", bad)
