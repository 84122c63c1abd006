"""``compare --price`` and prices files: each ok row's cost per call and per million
tokens, the price kept in the record with its source, and a bad price said in one line
before torch is imported (issue 34)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.analysis.cost import row_cost
from attnprof.cli.main import main
from attnprof.record.compare import CompareRecord
from attnprof.record.family import load_record
from attnprof.workload.prices import tokens_per_call

TINY = ["--batch", "1", "--heads", "2", "--seq", "64", "--head-dim", "16", "--min-time",
        "0.02", "--threads", "1", "--no-store"]


def _compare(tmp_path: Path, *flags: str) -> tuple[CompareRecord, str]:
    path = tmp_path / "r.json"
    assert main(["compare", "-v", "naive,sdpa", *TINY, "--json", str(path), *flags]) == 0
    record = load_record(path)
    assert isinstance(record, CompareRecord)
    return record, str(path)


def test_a_price_gives_every_ok_row_its_cost_and_is_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    record, _ = _compare(tmp_path, "--price", "2.5")
    text = capsys.readouterr().out
    assert record.price is not None and record.price.usd_per_hour == 2.5
    assert record.price.source == "--price"
    assert "price: $2.5/hour (--price)" in text
    assert tokens_per_call(record.workload) == 64  # inference: batch x seq per call
    for row in record.results:
        cost = row_cost(row, record.workload, 2.5)
        assert row.status == "ok" and cost is not None and row.latency_ms is not None
        assert cost.usd_per_call == pytest.approx(2.5 / 3600 * row.latency_ms.median / 1e3)
        assert cost.usd_per_million_tokens == pytest.approx(cost.usd_per_call / 64 * 1e6)
        (line,) = [ln for ln in text.splitlines() if ln.startswith(f"│ {row.variant} ")
                   and f"{cost.usd_per_million_tokens:.4g}" in ln]
        assert f"{cost.usd_per_call:.3g}" in line


def test_a_prices_file_prices_the_machine_by_kind_or_says_it_has_none(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('[prices]\n"h100-sxm" = 2.49\ncpu = 0.05\n')
    monkeypatch.setenv("ATTNPROF_PRICES", str(prices))
    record, _ = _compare(tmp_path)
    assert record.price is not None and record.price.usd_per_hour == 0.05
    assert record.price.source.endswith("(ATTNPROF_PRICES): cpu")
    capsys.readouterr()
    prices.write_text('[prices]\n"h100-sxm" = 2.49\n')
    record, _ = _compare(tmp_path)
    assert record.price is None
    assert "no price for" in capsys.readouterr().out


_PROBE = """
import sys
from attnprof.cli.main import main
status = main(sys.argv[1:])
print(status, "torch" in sys.modules)
"""


@pytest.mark.subprocess
@pytest.mark.parametrize(("flags", "file_text", "said"), [
    (["--price", "-1"], None, "--price must be a positive number"),
    (["--price", "nan"], None, "--price must be a positive number"),
    (["--price", "two"], None, "--price 'two' is not a number"),
    (["--prices", "FILE"], "x = [", "is not valid TOML"),
    (["--prices", "FILE"], "[other]\na = 1\n", "prices no device"),
    (["--prices", "FILE"], "[prices]\ncpu = -3\n", "must be a positive number"),
])
def test_a_bad_price_is_one_line_before_torch(tmp_path: Path, flags: list[str],
                                              file_text: str | None, said: str) -> None:
    if file_text is not None:
        (tmp_path / "p.toml").write_text(file_text)
        flags = [f if f != "FILE" else str(tmp_path / "p.toml") for f in flags]
    done = subprocess.run([sys.executable, "-c", _PROBE, "compare", *TINY, *flags],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.split() == ["2", "False"], (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert said in line, line


def test_diff_shows_the_cost_change_beside_the_latency(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    old, old_path = _compare(tmp_path / "a", "--price", "2")
    new, new_path = _compare(tmp_path / "b", "--price", "3")
    capsys.readouterr()
    assert main(["diff", old_path, new_path, "--json", str(tmp_path / "d.json")]) in (0, 1)
    text = capsys.readouterr().out
    assert "$ per 1M" in text
    for record, price in ((old, 2.0), (new, 3.0)):
        for row in record.results:
            cost = row_cost(row, record.workload, price)
            assert cost is not None
            assert f"${cost.usd_per_million_tokens:.4g}" in text
