"""Budgets files gate a run: exit 0 when every budget holds, 1 when one fails (saying by
how much), 2 for a malformed file — one line naming the key, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.cli.main import main

RUN = ["--seq", "32", "--batch", "1", "--heads", "2", "--head-dim", "16", "--min-time", "0.01",
       "--rounds", "1"]


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "budgets.toml"
    path.write_text(text)
    return str(path)


HOLDS = '''
title = "generous"
[[budget]]
variant = "sdpa"
seq = ">=16"
latency_ms = { max = 10000 }
peak_memory_mib = { max = 1024 }
max_abs_error = { max = 1e-4 }

[[budget]]
variant = "naive"
mode = "decode"      # this run does not measure decode: not checked, not failed
latency_ms = { max = 0.000001 }
'''

BREAKS = '''
[[budget]]
seq = "16..64"
latency_ms = { max = 0.000001 }
'''


def test_compare_exit_codes_on_real_runs(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--variants", "sdpa,naive", *RUN,
                 "--budgets", _file(tmp_path, HOLDS)]) == 0
    out = capsys.readouterr().out
    assert "all 3 budget checks hold" in out
    assert "budget #2 (naive · mode=decode) selects nothing" in out
    assert main(["compare", "--variants", "sdpa,naive", *RUN,
                 "--budgets", _file(tmp_path, BREAKS)]) == 1
    out = capsys.readouterr().out
    assert "2 of 2 budget checks failed" in out and "× the max (+" in out


def test_sweep_checks_every_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    budgets = _file(tmp_path, '''
[[budget]]
variant = "sdpa"
seq = ">=32"
latency_ms = { max = 10000 }
''')
    argv = ["sweep", "--variants", "sdpa", "--executor", "inline", *RUN]
    argv[argv.index("32")] = "16,32,64"
    assert main([*argv, "--budgets", budgets]) == 0
    out = capsys.readouterr().out
    assert "all 2 budget checks hold" in out  # seq 32 and 64; 16 is not selected


@pytest.mark.parametrize(("text", "message"), [
    ("[[budget]]\nlatency_ms = { max = 1 }\nlatencyms = 3", "budget #1: unknown key 'latencyms'"),
    ("[[budget]]\nlatency_ms = { maximum = 1 }", "budget #1 latency_ms: unknown key 'maximum'"),
    ("[[budget]]\nlatency_ms = { max = 'fast' }", "budget #1 latency_ms.max: Expected `float"),
    ("[[budget]]\nseq = '>>2048'\nlatency_ms = { max = 1 }", "budget #1 seq: '>>2048' is not"),
    ("[[budget]]\nseq = true\nlatency_ms = { max = 1 }", "budget #1 seq: Expected `int | str"),
    ("[[budget]]\nlatency_ms = { min = 5, max = 3 }", "budget #1 latency_ms has min 5 > max 3"),
    ("[[budget]]\nlatency_ms = { count = 3, max = 2 }",
     "budget #1 latency_ms count 3 is outside its own range"),
    ("[[budget]]\nlatency_ms = { max = nan }", "budget #1 latency_ms max must be a finite"),
    ("[[budget]]\npeak_memory_mib = { max = inf }", "peak_memory_mib max must be a finite"),
    ("[[budget]]\ntflops_share = { min = 40 }", "tflops_share is a share between 0 and 1"),
    ("[[budget]]\nvariant = 'sdpa'", "budget #1 bounds nothing"),
    ("title = 'nothing'", "states no budget"),
    ("[[budget]\n", "is not valid TOML"),
    ("x = " + "[" * 5000, "nests arrays or tables too deeply to read"),
])
def test_a_malformed_file_is_one_line_and_exit_2_before_running(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    json_path = tmp_path / "run.json"
    code = main(["compare", "--variants", "sdpa", *RUN, "--json", str(json_path),
                 "--budgets", _file(tmp_path, text)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and "\n" not in err, err
    assert not json_path.exists()


def test_expectations_bounds_share_the_checks(tmp_path: Path) -> None:
    from attnprof.errors import UsageError
    from attnprof.workload.expectations import load_expectations

    path = tmp_path / "expect.toml"
    path.write_text("[per_forward]\nlatency_ms = { max = nan }\n")
    with pytest.raises(UsageError, match=r"per_forward\.latency_ms max must be a finite number"):
        load_expectations(path)
