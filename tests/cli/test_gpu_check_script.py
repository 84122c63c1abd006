"""scripts/gpu_check.sh, checked here so its one call on a GPU is not spent on a typo.

The script runs only on a CUDA machine, with minutes of device time for everything; what
can be known without one is checked here: the shell syntax, every attnprof and benchmark
flag, the files that come back and the time the steps may take.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from attnprof.cli.main import _with_default_command, build_parser

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_check.sh"
#: The device tool returns at most 8 files, named in letters, digits, '.', '_' and '-'.
MAX_FILES = 8
#: The device budget: every step's timeout together, in seconds.
MAX_SECONDS = 8 * 60


def _commands() -> list[list[str]]:
    """The script's commands, continuation lines joined, split as the shell would."""
    text = SCRIPT.read_text().replace("\\\n", " ")
    lines = [ln.strip() for ln in text.splitlines()]
    return [shlex.split(ln, comments=True) for ln in lines if ln and not ln.startswith("#")]


def test_script_is_valid_bash() -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def test_every_attnprof_command_parses() -> None:
    runs = [c for c in _commands() if "attnprof" in c and "-m" in c]
    assert len(runs) == 2
    for command in runs:
        argv = command[command.index("attnprof") + 1 : command.index("2>&1")]
        args = build_parser().parse_args(_with_default_command(argv))
        assert args.command == "compare" and args.json.startswith("$OUT/")


def test_benchmark_flags_exist() -> None:
    (command,) = [c for c in _commands() if any(w.startswith("benchmarks/") for w in c)]
    script = next(w for w in command if w.startswith("benchmarks/"))
    source = (SCRIPT.parents[1] / script).read_text()
    for flag in (w for w in command if w.startswith("--")):
        assert f'"{flag}"' in source, f"{script} has no {flag}"


def test_outputs_fit_what_the_device_returns() -> None:
    names = set(re.findall(r"\$OUT/(\S+?)(?=[\s\"')]|$)", SCRIPT.read_text(), re.M))
    assert 0 < len(names) <= MAX_FILES, sorted(names)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", n) for n in names), sorted(names)


def test_steps_fit_the_device_budget() -> None:
    limits = [_duration(c[c.index("timeout") + 1 :]) for c in _commands() if "timeout" in c]
    assert len(limits) == 4
    assert sum(limits) <= MAX_SECONDS, limits


def _duration(words: list[str]) -> int:
    """The duration among ``timeout``'s arguments: the first word no option takes."""
    takes_value = ("-s", "-k", "--signal", "--kill-after")
    for i, w in enumerate(words):
        if w.isdigit() and (i == 0 or words[i - 1] not in takes_value):
            return int(w)
    pytest.fail(f"no duration in timeout {words}")
