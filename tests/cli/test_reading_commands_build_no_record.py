"""The command line of the reading commands (analyze, diff, env, report, runs, show) builds
no record and writes no file itself (issue 32): it turns flags into a request, calls
``attnprof.commands.<command>.run``, and hands the record to the renderers and the outputs,
whose lower-layer functions write. The rules are those of the contract every CLI module
follows (the general test over all of ``cli/`` applies them with an allow-list); comments
and strings are left out, so a docstring may name what the code must not do."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

import attnprof.cli

CLI = Path(attnprof.cli.__file__).parent
MODULES = ("analyze_cmd", "diff_cmd", "env_cmd", "report_cmd", "runs_cmd", "show_cmd")

#: What a CLI module may not do: build a record, or write a file (or the store) itself.
FORBIDDEN = {
    "a record built": r"\b\w*Record\(",
    "a record replaced": r"msgspec\.structs\.replace\(",
    "a file opened": r"(?<![\w.])open\(",
    "text written": r"\.write_text\(",
    "bytes written": r"\.write_bytes\(",
    "a record saved": r"\.save\(",
    "an atomic write": r"\b(atomic_write|write_atomic)\b",
    "shutil": r"\bshutil\.",
    "a file replaced": r"\bos\.replace\b",
    "SQLite": r"\bsqlite3\b",
}


def _code(path: Path) -> str:
    """The module's code with its comments taken out and each string left as ``""``."""
    source = path.read_text()
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans = [(starts[tok.start[0] - 1] + tok.start[1], starts[tok.end[0] - 1] + tok.end[1],
              '""' if tok.type == tokenize.STRING else "")
             for tok in tokenize.generate_tokens(io.StringIO(source).readline)
             if tok.type in (tokenize.COMMENT, tokenize.STRING)]
    for begin, end, keep in reversed(spans):
        source = source[:begin] + keep + source[end:]
    return source


@pytest.mark.parametrize("module", MODULES)
def test_the_cli_module_builds_no_record_and_writes_nothing(module: str) -> None:
    code = _code(CLI / f"{module}.py")
    found = {what: re.findall(pattern, code) for what, pattern in FORBIDDEN.items()}
    assert {what: hits for what, hits in found.items() if hits} == {}


@pytest.mark.parametrize("line", ["record.save(args.json)", "x = RanksRecord(ranks=[])",
                                  "open(path, 'w')", "write_atomic(p, b'')",
                                  "Path(p).write_text('x')", "shutil.copy(a, b)"])
def test_the_rules_catch_what_they_name(tmp_path: Path, line: str) -> None:
    module = tmp_path / "m.py"
    module.write_text(f"def f(path, p, a, b, args):\n    {line}\n    # open( in a comment\n")
    code = _code(module)
    assert any(re.search(pattern, code) for pattern in FORBIDDEN.values())
    assert "comment" not in code


def test_every_reading_command_has_a_command_module_with_a_request_and_run() -> None:
    import importlib
    import inspect

    for module in MODULES:
        command = importlib.import_module(f"attnprof.commands.{module.removesuffix('_cmd')}")
        assert command.__doc__, module
        requests = [name for name, obj in vars(command).items()
                    if name.endswith("Request") and inspect.isclass(obj)
                    and obj.__module__ == command.__name__]
        assert len(requests) == 1, (module, requests)
        signature = inspect.signature(command.run)
        assert list(signature.parameters)[:2] == ["request", "progress"], module
        assert signature.parameters["progress"].default is None
        assert command.run.__doc__, module
