"""An output that is a symbolic link is written through, never replaced (issue 21 item 1).

Before: ``os.replace`` onto the link swapped the link itself for a regular file; as root,
``--json /dev/stdout`` with stdout redirected replaced the machine's ``/dev/stdout`` and
``/dev/stderr`` links. Now the link is followed, one step at a time, to the file it names,
which is written atomically beside itself; a link that leads through ``/proc`` or ``/sys``
(``/dev/stdout`` is ``/proc/self/fd/1``) is refused in one line, exit 2; the link is left
as it was in every case.

(These tests never aim at the machine's own ``/dev/stdout``: a link made here to it, or to
``/proc/self/fd/1``, takes the same path through the code, and before the fix only that
link, not the machine's, was replaced.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.atomic import atomic_path, resolve_output, write_atomic
from attnprof.cli.main import main
from attnprof.errors import UsageError

TRACE = (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", '
         b'"pid": 1, "tid": 1, "ts": 0, "dur": 5}]}')


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.json"
    path.write_bytes(TRACE)
    return path


@pytest.mark.parametrize("target", ["/proc/self/fd/1", "/dev/stdout", "/dev/fd/1"])
def test_a_link_to_stdout_is_refused_and_kept(target: str, trace: Path,
                                              tmp_path: Path) -> None:
    link = tmp_path / "out.json"
    link.symlink_to(target)
    printed = tmp_path / "printed.txt"
    with open(printed, "wb") as stdout:  # stdout redirected to a regular file, as in the issue
        done = subprocess.run([sys.executable, "-m", "attnprof", "analyze", str(trace),
                               "--json", str(link)], stdout=stdout, stderr=subprocess.PIPE,
                              text=True, timeout=120, check=False)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "under /proc" in line and "out.json" in line
    assert link.is_symlink() and os.readlink(link) == target
    assert printed.read_bytes() == b""  # refused before anything ran


def test_a_link_to_a_file_writes_the_file(trace: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "results" / "analysis.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "out.json"
    link.symlink_to(os.path.relpath(target, tmp_path))
    assert main(["analyze", str(trace), "--json", str(link)]) == 0
    assert link.is_symlink() and Path(os.readlink(link)) == Path("results/analysis.json")
    assert target.read_text().startswith("{")
    # Nothing left beside the link or the target: the temporary file was made by the target.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "results", "trace.json"]
    assert [p.name for p in target.parent.iterdir()] == ["analysis.json"]


def test_a_dangling_link_makes_its_target(trace: Path, tmp_path: Path) -> None:
    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "made.json")
    assert main(["analyze", str(trace), "--json", str(link)]) == 0
    assert link.is_symlink() and (tmp_path / "made.json").read_text().startswith("{")


def test_a_chain_of_links_through_a_linked_folder(trace: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    (real / "second.json").symlink_to("final.json")  # relative to its own folder
    first = tmp_path / "first.json"
    first.symlink_to(tmp_path / "alias" / "second.json")
    assert resolve_output(first) == real / "final.json"
    assert main(["analyze", str(trace), "--json", str(first)]) == 0
    assert first.is_symlink() and (real / "second.json").is_symlink()
    assert (real / "final.json").read_text().startswith("{")


def test_a_loop_of_links_is_one_line(trace: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.json").symlink_to(tmp_path / "b.json")
    (tmp_path / "b.json").symlink_to(tmp_path / "a.json")
    assert main(["analyze", str(trace), "--json", str(tmp_path / "a.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "loop of symbolic links" in err and "\n" not in err
    assert (tmp_path / "a.json").is_symlink()


def test_a_link_to_a_device_or_a_link_to_the_input_is_refused(
        trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    to_null = tmp_path / "null.json"
    to_null.symlink_to("/dev/null")
    to_input = tmp_path / "input.json"
    to_input.symlink_to(trace)
    for link, says in ((to_null, "character device"), (to_input, "is the input")):
        assert main(["analyze", str(trace), "--json", str(link)]) == 2
        assert says in capsys.readouterr().err
        assert link.is_symlink()
    assert trace.read_bytes() == TRACE


def test_the_library_writers_keep_the_link(tmp_path: Path) -> None:
    """write_atomic and atomic_path (torch.profiler's exporter) write through a link too."""
    target = tmp_path / "t.bin"
    link = tmp_path / "l.bin"
    link.symlink_to(target)
    write_atomic(link, b"one")
    assert link.is_symlink() and target.read_bytes() == b"one"
    with atomic_path(link) as tmp:
        assert tmp.parent == tmp_path
        tmp.write_bytes(b"two")
    assert link.is_symlink() and target.read_bytes() == b"two"
    proc = tmp_path / "p.bin"
    proc.symlink_to("/proc/self/fd/2")
    with pytest.raises(UsageError, match="under /proc"):
        write_atomic(proc, b"x")
    assert proc.is_symlink()


def test_dot_dot_after_a_linked_folder_is_where_the_kernel_puts_it(
        trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``alias/../out.json`` with ``alias`` a link to ``real/sub``: the file is made in
    ``real``, as ``open`` would make it, not beside ``alias`` (a path normalised as text)."""
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "real" / "sub")
    monkeypatch.chdir(tmp_path)
    assert resolve_output("alias/../out.json") == tmp_path / "real" / "out.json"
    assert main(["analyze", str(trace), "--json", "alias/../out.json"]) == 0
    assert (tmp_path / "real" / "out.json").is_file()
    assert not (tmp_path / "out.json").exists()
