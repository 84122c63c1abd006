"""``--mask`` and ``--lengths`` mistakes: one line, exit 2, before torch is imported
(see test_mistakes_before_torch.py); and a mask a variant cannot take is that variant's
``unsupported`` row, never an exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_PROBE = """
import sys
from attnprof.cli.main import main
status = main(sys.argv[1:])
print(status, "torch" in sys.modules)
"""


def _run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src}
    return subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True,
                          text=True, timeout=120, check=False, cwd=cwd, env=env)


@pytest.mark.parametrize(("flags", "said"), [
    (["--mask", "bogus"], "unknown --mask 'bogus'"),
    (["--mask", "bool", "--mask-density", "1.5"], "--mask-density must be a number in [0, 1]"),
    (["--mask", "bool", "--mask-density", "-0.1"], "--mask-density must be a number in [0, 1]"),
    (["--mask", "bool", "--mask-density", "nan"], "got nan"),
    (["--mask", "bool", "--mask-density", "inf"], "got inf"),
    (["--mask", "padding", "--lengths", "0,3"], "length 0 is not a positive integer"),
    (["--mask", "padding", "--lengths=-5..10"], "length -5 is not a positive integer"),
    (["--mask", "padding", "--lengths", "64..32"], "the range's start is past its end"),
    (["--mask", "padding", "--seq", "256", "--lengths", "32..512"],
     "length 512 is longer than --seq 256"),
    (["--mask", "document", "--seq", "64", "--lengths", "80"],
     "length 80 is longer than --seq 64"),
    (["--mask", "padding", "--batch", "4", "--lengths", "8,9"],
     "--lengths gives 2 lengths for --batch 4"),
    (["--mask", "padding", "--lengths", "8,x"], "is not a range LO..HI, a list"),
    (["--lengths", "32,64"], "--lengths is for --mask padding or document, not --mask causal"),
    (["--mask", "prefix", "--mask-density", "0.5"], "--mask-density is for --mask bool"),
    (["--mask", "causal", "--no-causal"], "--mask causal contradicts --no-causal"),
    (["--mask", "padding", "--lengths", "8..32", "--lengths-dist", "zipf"],
     "unknown --lengths-dist 'zipf'"),
    (["--mask", "padding", "--lengths", "8,9", "--lengths-dist", "normal"],
     "--lengths-dist draws a LO..HI range"),
])
@pytest.mark.parametrize("command", ["compare", "sweep"])
def test_a_mask_mistake_is_one_line_before_torch(command: str, flags: list[str],
                                                 said: str) -> None:
    done = _run(command, *flags, "--no-store")
    assert done.stdout.split() == ["2", "False"], (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("attnprof: error:") and said in line, line


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("make", "said"), [
    (lambda p: _file(p, "words.txt", "32\n64\nabc\n"), "entry 3 ('abc') is not an integer"),
    (lambda p: _file(p, "floats.json", "[32, 64.5]"), "entry 2 ('64.5') is not an integer"),
    (lambda p: _file(p, "dict.json", '{"a": 1}'), "is not an integer"),
    (lambda p: _file(p, "broken.json", "[32, 64"), "is not a JSON list of integers"),
    (lambda p: _file(p, "empty.txt", "\n"), "holds no lengths"),
    (lambda p: _file(p, "zero.txt", "32\n0\n"), "length 0 is not a positive integer"),
    (lambda p: str(p / "missing.txt"), "not found"),
    (lambda p: str(p), "is a directory"),
])
def test_a_lengths_file_that_is_not_a_list_of_integers_is_refused(tmp_path: Path, make,
                                                                  said: str) -> None:
    done = _run("compare", "--mask", "padding", "--lengths", "@" + make(tmp_path),
                "--no-store")
    assert done.stdout.split() == ["2", "False"], (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert said in line, line


def test_a_fifo_of_lengths_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "lengths"
    os.mkfifo(fifo)
    done = _run("compare", "--mask", "padding", "--lengths", f"@{fifo}", "--no-store")
    assert done.stdout.split() == ["2", "False"] and "FIFO" in done.stderr


def test_a_lengths_file_is_read_one_per_line_or_as_json(tmp_path: Path) -> None:
    from attnprof.workload.lengths import read_lengths_file

    assert read_lengths_file(_file(tmp_path, "a.txt", "32\n 64\n\n200\n")) == (32, 64, 200)
    assert read_lengths_file(_file(tmp_path, "b.json", json.dumps([5, 6]))) == (5, 6)


def test_a_mask_a_variant_cannot_take_is_its_row_not_an_exit(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    done = _run("compare", "--mask", "alibi", "--batch", "1", "--heads", "2", "--seq", "16",
                "--head-dim", "8", "--variants", "sdpa,sliding-window,sdpa-jagged",
                "--min-time", "0.01", "--rounds", "1", "--json", str(out), "--no-store")
    assert done.stdout.split()[-2:] == ["0", "True"], done.stderr[-2000:]
    rows = {r["variant"]: r for r in json.loads(out.read_text())["results"]}
    assert rows["sdpa"]["status"] == "ok"
    assert rows["sliding-window"]["status"] == "unsupported"
    assert "--mask alibi" in rows["sliding-window"]["reason"]
    assert "--mask padding" in rows["sdpa-jagged"]["reason"]
