"""CI runs what the README tells a new user, nothing hidden beside it: the README's two
indented commands (set up and run the main job; set up and run the tests) are lines of
.ci/run, byte for byte, in the README's order, and every other command line of .ci/run
only installs the browser the report tests drive."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_commands() -> list[str]:
    """The indented command lines of the README's set-up section (before the first table)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    head = text.split("```", 1)[0]
    return [line[4:] for line in head.splitlines()
            if line.startswith("    python3 -m venv .venv")]


def test_ci_runs_the_readme_commands_exactly_and_in_order() -> None:
    commands = _readme_commands()
    assert len(commands) == 2, commands  # the main job, then the tests
    assert commands[0].endswith("&& attnprof") and commands[1].endswith("-m pytest")
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    found = [line for line in script if line.startswith("python3 -m venv .venv")]
    assert found == commands


def test_ci_runs_nothing_else_but_the_browser_install() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert script.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in script
    commands = set(_readme_commands())
    others = [line.strip() for line in script.splitlines()
              if line.strip() and not line.lstrip().startswith("#")
              and line not in commands]
    allowed = re.compile(r"^(set -euo pipefail|cd \"\$\(dirname \"\$0\"\)/\.\.\"|"
                         r"if ! command -v chromium .*|\(apt-get update .*|"
                         r"\|\| echo \"ci: chromium could not be installed.*|fi)$")
    assert [line for line in others if not allowed.match(line)] == []
