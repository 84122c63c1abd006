"""The command line builds no record and writes no file itself (issue 32, item 1): it turns
flags into a request, calls ``attnprof.commands.<command>.run``, hands the record to the
renderers and the outputs, and chooses the exit status. File writes go through lower
layers (``render.write_rendered``, the reports writer, :mod:`attnprof.commands.saving`).

Every module under ``src/attnprof/cli/`` is read as text, comments left out, and fails on
any of :data:`RULES`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[2] / "src" / "attnprof" / "cli"

#: What the CLI may not do, each a pattern over a line of code (comments removed).
RULES: dict[str, re.Pattern[str]] = {
    "builds a record": re.compile(r"\b[A-Z]\w*Record\("
                                  r"|\b[A-Z]\w*Record\.(?:of|from)_\w*\("),
    "replaces a record's fields": re.compile(r"structs\.replace\(\s*[\w.]*record", re.I),
    "opens a file": re.compile(r"(?<![\w.])open\(|\.open\([^)]*[\"'][wax+]"),
    "writes a file": re.compile(r"\.write_text\(|\.write_bytes\(|\.save\("),
    "writes atomically": re.compile(r"\batomic_write\b|\bwrite_atomic\b"),
    "moves or copies files": re.compile(r"\bshutil\.|\bos\.replace\b|\bos\.rename\b"),
    "talks to SQLite": re.compile(r"\bsqlite3\b"),
}

#: Modules still building records or writing files (none: every command's work is in
#: commands/); a module listed here that passes fails the test below.
MOVED_BY_CMDB: frozenset[str] = frozenset()


def violations(text: str) -> list[str]:
    """``"line N: what (code)"`` for every rule a module's ``text`` breaks."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for what, pattern in RULES.items():
            if pattern.search(code):
                found.append(f"line {number}: {what} ({code.strip()})")
    return found


def _modules() -> list[Path]:
    return sorted(CLI.glob("*.py"))


@pytest.mark.parametrize("module", _modules(), ids=lambda p: p.name)
def test_a_cli_module_builds_no_record_and_writes_no_file(module: Path) -> None:
    found = violations(module.read_text(encoding="utf-8"))
    if module.name in MOVED_BY_CMDB:
        assert found, (f"{module.name} passes now: take it out of MOVED_BY_CMDB")
        return
    assert not found, f"cli/{module.name}: " + "; ".join(found)


def test_the_modules_are_found_and_the_allow_list_names_real_ones() -> None:
    names = {p.name for p in _modules()}
    assert {"main.py", "compare_cmd.py", "sweep_cmd.py"} <= names
    assert names >= MOVED_BY_CMDB


@pytest.mark.parametrize(("code", "what"), [
    ("    record = CompareRecord(workload=w)", "builds a record"),
    ("    record = RecommendRecord.of_sweep(sweep)", "builds a record"),
    ("    record = msgspec.structs.replace(record, price=p)", "replaces a record's fields"),
    ("    with open(args.json, 'w') as f:", "opens a file"),
    ("    with Path(p).open('wb') as f:", "opens a file"),
    ("    Path(args.out).write_text(text)", "writes a file"),
    ("    record.save(args.json)", "writes a file"),
    ("    write_atomic(args.output, data)", "writes atomically"),
    ("    shutil.copy(a, b)", "moves or copies files"),
    ("    os.replace(tmp, path)", "moves or copies files"),
    ("    import sqlite3", "talks to SQLite"),
])
def test_each_rule_catches_what_it_names(code: str, what: str) -> None:
    assert [v.split(": ", 1)[1].split(" (")[0] for v in violations(code)] == [what]


@pytest.mark.parametrize("code", [
    "    from attnprof.record.sweep import SweepRecord",
    "    resume = SweepRecord.load(flags.resume)",
    "    if not isinstance(record, CompareRecord):",
    "    plan = msgspec.structs.replace(base.plan, min_time_s=t)",
    "    write_rendered(CsvRenderer(), record, args.csv)  # record.save(x) in a comment",
    "    devnull = os.open(os.devnull, os.O_WRONLY)",
])
def test_what_the_cli_may_do_passes(code: str) -> None:
    assert violations(code) == []
