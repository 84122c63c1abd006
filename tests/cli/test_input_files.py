"""Every file a command reads is checked as its outputs are (issue 21 items 2 and 13).

Records and resume files, budgets and expectations, a model's ``config.json``, a variant's
Python file, a trace: each must be a regular file (a trace may also be a pipe, read as a
stream), within a size cap the message states, read in bounded memory. ``sweep --resume
/dev/zero`` grew to 24 GB, a FIFO as ``--resume`` blocked forever, a 2 GB ``config.json`` of
spaces took 4.4 GB, and a FIFO, a loop of links or a folder as ``config.json`` was called
missing. Each now ends at once in one line naming what the file is, exit 2, nothing written.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.input_files import CONFIG, RECORD, TOML

# How each reader is reached on the command line: (argv for a given path and a scratch
# folder, the reader's size cap).
READERS: dict[str, tuple[Callable[[str, Path], list[str]], int | None]] = {
    "sweep --resume": (lambda p, _: ["sweep", "--seq", "16", "--resume", p], RECORD.bytes),
    "recommend --from": (lambda p, _: ["recommend", "--from", p], RECORD.bytes),
    "compare --budgets": (lambda p, _: ["compare", "--budgets", p], TOML.bytes),
    "sweep --budgets": (lambda p, _: ["sweep", "--seq", "16", "--budgets", p], TOML.bytes),
    "check --expect": (lambda p, _: ["check", "--expect", p, "naive"], TOML.bytes),
    "model config.json": (lambda p, tmp: ["model", "--model-path", _config_folder(p, tmp)],
                          CONFIG.bytes),
    "variant file": (lambda p, _: ["compare", "--variants", f"{p}:attention"], None),
    "analyze trace": (lambda p, _: ["analyze", p], None),
}


def _config_folder(path: str, tmp_path: Path) -> str:
    """A model folder in ``tmp_path`` whose config.json is a link to ``path``."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").symlink_to(os.path.abspath(path))
    return str(folder)


@pytest.fixture(autouse=True)
def _no_hang() -> Iterator[None]:
    """A reader that blocks (a FIFO opened for reading waits for a writer) fails the test
    instead of hanging the suite."""
    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("the command blocked reading its input")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _bad_file(kind: str, tmp_path: Path) -> tuple[str, str]:
    """A path of ``kind`` and what the message must say of it."""
    path = tmp_path / f"input-{kind}"
    if kind == "fifo":
        os.mkfifo(path)
        return str(path), "FIFO"
    if kind == "device":
        return "/dev/zero", "character device"
    if kind == "folder":
        path.mkdir()
        return str(path), "directory"
    if kind == "loop":
        path.symlink_to(tmp_path / "other")
        (tmp_path / "other").symlink_to(path)
        return str(path), "loop of symbolic links"
    if kind == "dangling":
        path.symlink_to(tmp_path / "nothing-here")
        return str(path), "which does not exist"
    if kind == "proc":
        return "/proc/self/status", "/proc"
    raise AssertionError(kind)


def _one_error_line(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str
                    ) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("attnprof: error:"), err
    for needle in needles:
        assert needle in err, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "loop", "dangling", "proc"])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_what_is_not_a_regular_file_is_named(reader: str, kind: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    if reader == "analyze trace" and kind in ("fifo", "folder"):
        pytest.skip("analyze reads a pipe as a stream and a folder as the traces in it "
                    "(test_analyze_hardening, test_analyze_folders)")
    argv_of, _ = READERS[reader]
    path, what = _bad_file(kind, tmp_path)
    out = tmp_path / "out.json"
    argv = argv_of(path, tmp_path)
    if reader != "check --expect":
        argv += ["--json", str(out)]
    _one_error_line(argv, capsys, what)
    assert not out.exists()


@pytest.mark.parametrize("reader", sorted(r for r, (_, cap) in READERS.items() if cap))
def test_a_file_over_its_cap_is_refused_unread(reader: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    argv_of, cap = READERS[reader]
    assert cap is not None
    big = tmp_path / "big.file"
    with open(big, "wb") as f:  # sparse: 2 GiB of nothing, costing no disk
        f.truncate(2 << 30)
    err = _one_error_line(argv_of(str(big), tmp_path), capsys, "2.0 GiB", "cap")
    assert f"{cap >> 20}.0 MiB" in err


def test_a_two_gigabyte_config_of_spaces_takes_no_gigabytes(tmp_path: Path) -> None:
    """In a fresh process, so its peak resident memory is the command's own."""
    folder = tmp_path / "model"
    folder.mkdir()
    with open(folder / "config.json", "wb") as f:
        f.truncate(2 << 30)  # reads as zero bytes, not spaces, but is as large
    code = ("import sys; from attnprof.cli.main import main; "
            f"rc = main(['model', '--model-path', {str(folder)!r}]); "
            "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]; "
            "print(peak.split()[1], file=sys.stderr); sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 2, done.stderr
    said, peak_kib = done.stderr.strip().rsplit("\n", 1)
    assert "over the 16.0 MiB cap" in said
    # This process's own peak (VmHWM, reset by exec; ru_maxrss would carry pytest's own):
    # transformers' import, not the 2 GiB file, which was never read.
    assert int(peak_kib) < 1 << 20


@pytest.mark.parametrize("kind", ["fifo", "loop", "file", "absent"])
def test_model_path_that_is_not_a_folder_says_what_it_is(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "model"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "loop":
        path.symlink_to(tmp_path / "other")
        (tmp_path / "other").symlink_to(path)
    elif kind == "file":
        path.write_text("{}")
    said = {"fifo": "it is a FIFO", "loop": "it is a loop of symbolic links",
            "file": "it is a regular file", "absent": "nothing is there"}[kind]
    _one_error_line(["model", "--model-path", str(path)], capsys, "is not a folder", said)


def test_a_config_json_given_as_model_path_names_its_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    _one_error_line(["model", "--model-path", str(tmp_path / "config.json")], capsys,
                    f"give its folder, {str(tmp_path)!r}")


def test_a_record_through_a_symlink_and_stdin_redirect_still_reads(tmp_path: Path) -> None:
    """The checks follow links to the file they name: a link to a record reads as the
    record, and ``/dev/stdin`` redirected from a file (a link through /proc) is that file."""
    from attnprof.record.family import decode_record, load_record

    record = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "compare-v1.json"
    link = tmp_path / "link.json"
    link.symlink_to(record)
    assert load_record(link) == decode_record(record.read_bytes(), "x")
    with open(record, "rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-c", "from attnprof.record.family import load_record; "
             "print(type(load_record('/dev/stdin')).__name__)"],
            stdin=stdin, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "CompareRecord"
