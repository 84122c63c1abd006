"""``model`` over lists of sizes: every combination runs through the executor and its
implementations are ranked, or said to tie with the p-value, within the combination."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from attnprof.cli.main import main

SMALL = ["--hidden", "64", "--heads", "4", "--vocab", "64", "--min-time", "0.02",
         "--rounds", "3", "--trace-steps", "1", "--no-store"]


def test_every_combination_runs_and_each_is_ranked_or_tied(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["model", "llama", "--layers", "1", "--seq", "64,128", "--kv-heads", "2,4",
                 "--attn", "eager,sdpa", *SMALL])
    text = capsys.readouterr().out
    assert code in (0, 3)  # 3: shares unreliable on a busy machine; the ranks still stand
    rows = re.findall(r"│\s+1 │\s+(\d) │\s+4 │\s+(\d+) │\s+1 │ (eager|sdpa)\s+│ prefill │ ok\s+"
                      r"│\s+[\d.]+ │ ([^│]+)│", text)
    assert sorted((kv, seq, impl) for kv, seq, impl, _ in rows) == sorted(
        (kv, seq, impl) for kv in "24" for seq in ("64", "128") for impl in ("eager", "sdpa"))
    for kv in "24":
        for seq in ("64", "128"):
            ranks = sorted(r.strip() for k, s, _, r in rows if (k, s) == (kv, seq))
            assert ranks[0] == "1 (fastest)", ranks
            # The other is a tie with its p-value, or ranked second with its ratio and p.
            assert re.fullmatch(r"(tie \(p=[\d.e-]+(; [\d.]+× within ±\d+%)?\)"
                                r"|2: [\d.]+× (eager|sdpa) \(p=[\d.e-]+\))", ranks[1]), ranks
    assert "Mann-Whitney U" in text and "not ranked" in text


_PROBE = ("import sys\nfrom attnprof.cli.main import main\n"
          "print(main(sys.argv[1:]), 'torch' in sys.modules)")


@pytest.mark.parametrize(("flags", "said"), [
    (["--seq", "64,x"], "'x' in '64,x' is not an integer"),
    (["--kv-heads", "2,0"], "--kv-heads must be a positive integer, got 0"),
    (["--seq", "64,128", "--json", "out.json"], "--json writes one model run"),
    (["--seq", "1,2,3,4,5,6,7,8,9", "--batch", "1,2,3,4,5,6,7,8"], "the lists make 72"),
])
def test_a_bad_list_is_one_line_before_torch(flags: list[str], said: str, tmp_path) -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE, "model", "llama", *flags,
                           "--no-store"], capture_output=True, text=True, timeout=120,
                          check=False, cwd=tmp_path)
    assert done.stdout.split() == ["2", "False"], (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("attnprof: error:") and said in line, line
    assert not (tmp_path / "out.json").exists()


def test_a_combination_that_cannot_be_built_stops_the_grid_before_any_run(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["model", "llama", "--layers", "1", "--seq", "16", "--kv-heads", "2,3",
                 *SMALL])
    out, err = capsys.readouterr()
    assert code == 2 and "size combinations" not in out
    (line,) = err.strip().splitlines()
    assert "--kv-heads 3 must divide --heads 4" in line
