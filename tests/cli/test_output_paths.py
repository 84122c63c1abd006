"""Outputs never replace what is not attnprof's to replace (issue 11, item 1).

Before: ``--json`` or ``--csv`` onto a device node or a FIFO swapped it for a regular file
(as root, ``--json /dev/null`` replaced ``/dev/null``); ``attnprof analyze T --json T``
overwrote the trace it had read and exited 0; ``--json X --csv X`` wrote both to one
path. Each is refused now, in one line with exit status 2, before any work — on every
command — and the library refuses them again at the write.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.errors import UsageError

SMALL = ["--batch", "1", "--heads", "2", "--seq", "32", "--head-dim", "16",
         "--min-time", "0.01", "--variants", "naive"]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    err = capsys.readouterr().err.strip()
    return code, err


def refused(args: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    code, err = run(args, capsys)
    assert code == 2, err
    (line,) = err.splitlines()
    assert line.startswith("attnprof: error: ")
    for needle in needles:
        assert needle in line, line


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """A real CPU trace, captured now."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    path = tmp_path / "trace.json"
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.randn(16, 16).softmax(-1)
    prof.export_chrome_trace(str(path))
    return path


@pytest.mark.parametrize("flag", ["--json", "--csv"])
def test_a_device_node_is_refused_and_left_alone(flag: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    before = os.stat("/dev/null")
    refused(["compare", *SMALL, flag, "/dev/null"], capsys, flag, "'/dev/null'",
            "character device")
    # ... also through a symlink to it.
    link = tmp_path / "null-link.json"
    link.symlink_to("/dev/null")
    refused(["compare", *SMALL, flag, str(link)], capsys, flag, "character device")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino
    assert link.is_symlink()


def test_a_fifo_is_refused_and_left_a_fifo(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    refused(["compare", *SMALL, "--csv", str(fifo)], capsys, "--csv", "FIFO")
    refused(["profile", "naive", "--json", str(fifo), "--out", str(tmp_path / "t")], capsys,
            "--json", "FIFO")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert not (tmp_path / "t").exists()  # nothing made before the refusal


@pytest.mark.parametrize("path", ["/proc/self/attnprof.json", "/sys/attnprof.json"])
def test_kernel_trees_are_refused(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    refused(["compare", *SMALL, "--json", path], capsys, "--json", "the kernel's interface")
    refused(["compare", *SMALL, "--trace", "/proc/attnprof-traces"], capsys, "--trace",
            "/proc")


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_analyze_does_not_overwrite_its_input(how: str, trace: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = trace
    if how == "symlink":
        out = tmp_path / "link.json"
        out.symlink_to(trace)
    elif how == "hardlink":
        out = tmp_path / "hard.json"
        os.link(trace, out)
    content = trace.read_bytes()
    refused(["analyze", str(trace), "--json", str(out)], capsys, "--json", "is the input",
            str(trace))
    assert trace.read_bytes() == content


def test_analyze_does_not_overwrite_a_trace_of_its_folder(
        trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    content = trace.read_bytes()
    refused(["analyze", str(trace.parent), "--json", str(trace)], capsys, "is the input")
    assert trace.read_bytes() == content


def test_a_user_variant_file_is_an_input(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    user = tmp_path / "mine.py"
    user.write_text("def attention(q, k, v, **kw):\n    return q\n")
    refused(["compare", *SMALL[:-2], "--variants", f"{user}:attention", "--csv", str(user)],
            capsys, "--csv", "is the input")
    assert "def attention" in user.read_text()


@pytest.mark.parametrize("link", ["same", "hardlink"])
def test_two_outputs_on_one_file_are_refused(link: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    json_path = tmp_path / "out.json"
    csv_path = json_path
    if link == "hardlink":
        json_path.write_text("{}")
        csv_path = tmp_path / "out.csv"
        os.link(json_path, csv_path)
    refused(["compare", *SMALL, "--json", str(json_path), "--csv", str(csv_path)], capsys,
            "--csv", "same file as --json")


def test_an_output_in_the_trace_folder_must_not_be_a_trace(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "traces"
    refused(["compare", *SMALL, "--trace", str(traces), "--json",
             str(traces / "naive.pt.trace.json.gz")], capsys, "--trace", "same file")
    refused(["profile", "naive", "--out", str(traces), "--json", str(traces)], capsys,
            "--out", "same file")
    assert not traces.exists()


def test_the_record_may_go_in_a_trace_folder_yet_to_be_made(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "traces"
    assert main(["compare", *SMALL, "--trace", str(traces), "--json",
                 str(traces / "run.json")]) == 0
    assert sorted(p.name for p in traces.iterdir()) == ["naive.pt.trace.json.gz", "run.json"]


def test_the_library_refuses_at_the_write_too(tmp_path: Path) -> None:
    from attnprof.record.analyze import AnalyzeRecord

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="FIFO"):
        AnalyzeRecord().save(fifo)
    with pytest.raises(UsageError, match="character device"):
        AnalyzeRecord().save("/dev/null")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.json"]  # no temp file left


def test_a_trace_the_folder_would_replace_must_be_a_regular_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    os.mkfifo(traces / "naive.pt.trace.json.gz")
    refused(["compare", *SMALL, "--trace", str(traces)], capsys, "--trace", "FIFO")
    assert stat.S_ISFIFO(os.stat(traces / "naive.pt.trace.json.gz").st_mode)


@pytest.mark.parametrize("command", [
    ["sweep", "--seq", "16,32", "--batch", "1", "--heads", "2", "--head-dim", "8",
     "--variants", "sdpa"],
    ["model", "llama", "--layers", "1", "--hidden", "32", "--heads", "4", "--kv-heads", "2",
     "--seq", "8"],
])
def test_sweep_and_model_obey_the_same_rules(command: list[str], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    both = str(tmp_path / "out")
    refused([*command, "--json", both, "--csv", both], capsys, "same file as --json")
    refused([*command, "--json", "/dev/null"], capsys, "/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert not any(tmp_path.iterdir())


def test_a_model_factory_file_is_an_input(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    factory = tmp_path / "factory.py"
    factory.write_text("def make():\n    raise RuntimeError('never built')\n")
    before = factory.read_text()
    refused(["model", f"{factory}:make", "--json", str(factory)], capsys, "is the input")
    assert factory.read_text() == before
