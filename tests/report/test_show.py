"""``attnprof show RECORD.json``: any record printed as its command printed it, without
torch, for every record kind; and the commands' own output begins with exactly that."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.record.family import load_record
from attnprof.render.terminal import TerminalRenderer

KINDS = ("compare", "compare-statuses", "profile", "analyze", "compare-v1", "sweep", "model",
         "check", "limits", "recommend", "ranks", "diff", "diff-trace")


@pytest.mark.parametrize("kind", KINDS)
def test_show_prints_what_the_command_printed(kind: str, records_by_kind: dict[str, object],
                                              tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    record = records_by_kind[kind]
    path = tmp_path / f"{kind}.json"
    record.save(path)  # type: ignore[attr-defined]
    # What the command wrote to stdout: its renderer, sized for stdout, over the record.
    printed = TerminalRenderer.for_stdout().render(record)  # type: ignore[arg-type]
    assert main(["show", str(path)]) == 0
    assert capsys.readouterr().out == printed
    assert load_record(path) == record


@pytest.mark.parametrize("kind", KINDS)
def test_show_imports_no_torch(kind: str, records_by_kind: dict[str, object],
                               tmp_path: Path) -> None:
    path = tmp_path / f"{kind}.json"
    records_by_kind[kind].save(path)  # type: ignore[attr-defined]
    code = ("import sys\nfrom attnprof.cli.main import main\n"
            f"status = main(['show', {str(path)!r}])\n"
            "assert status == 0, status\n"
            "assert 'torch' not in sys.modules, 'show imported torch'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout


def test_a_command_prints_the_record_then_what_it_wrote(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], public_traces: Path) -> None:
    """End to end: ``analyze`` and ``recommend --from`` print exactly what ``show`` prints
    of the record they wrote, then only the lines naming their files."""
    trace = str(public_traces / "a100_alexnet_inference.json.gz")
    analysis = tmp_path / "a.json"
    assert main(["analyze", trace, "--json", str(analysis)]) == 0
    ran = capsys.readouterr().out
    assert main(["show", str(analysis)]) == 0
    shown = capsys.readouterr().out
    assert ran.startswith(shown)
    assert ran[len(shown):].strip().startswith("analysis written to")


def test_show_refuses_what_is_not_a_record(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "trace.json"
    bad.write_text('{"traceEvents": []}')
    assert main(["show", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "trace.json" in err
    assert main(["show", str(tmp_path / "missing.json")]) == 2
    assert main(["show", str(bad), "--top", "0"]) == 2
