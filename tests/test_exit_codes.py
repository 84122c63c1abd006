"""One exit-status table (issue 17): every command has its row in
:mod:`attnprof.exit_codes`, every copy of the table in the docs is that table, and the
usage and stop statuses come from it."""

from __future__ import annotations

import signal
from pathlib import Path

from attnprof.cli.main import COMMANDS
from attnprof.errors import UsageError
from attnprof.exit_codes import TABLE, ExitCode, markdown_table, stopped
from attnprof.signals import Terminated, exit_status

ROOT = Path(__file__).resolve().parents[1]
HEADER = "| command | 0 | 1 | 2 | 3 |"


def test_every_command_has_one_row() -> None:
    named = [c for commands, _ in TABLE for c in commands]
    assert sorted(named) == sorted(c.NAME for c in COMMANDS)


def _quoted_tables() -> dict[str, str]:
    """Each Markdown copy of the exit-status table in the README and docs/, by file."""
    found = {}
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        if HEADER in text:
            block = text[text.index(HEADER):].split("\n\n", 1)[0]
            found[str(path.relative_to(ROOT))] = block.strip() + "\n"
    return found


def test_the_docs_quote_the_table_in_the_code() -> None:
    quoted = _quoted_tables()
    assert quoted, "no copy of the exit-status table in README.md or docs/"
    for where, table in quoted.items():
        assert table == markdown_table(), (
            f"{where}'s exit-status table is not attnprof.exit_codes's: paste the output of "
            "python -m attnprof.exit_codes")


def test_usage_errors_and_stops_take_their_status_from_the_table() -> None:
    assert UsageError("x").exit_code == ExitCode.USAGE == 2
    assert Terminated(signal.SIGTERM).exit_code == ExitCode.SIGTERM == stopped(15) == 143
    assert exit_status(Terminated(signal.SIGHUP)) == ExitCode.SIGHUP == 129
    assert exit_status(KeyboardInterrupt()) == ExitCode.SIGINT == 130
