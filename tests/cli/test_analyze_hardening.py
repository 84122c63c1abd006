"""``attnprof analyze`` on hostile inputs and a hostile machine: one line, never a traceback.

Pipes (``/dev/stdin``, ``<(zcat trace.json.gz)``) are read like files; JSON nested thousands
deep (in a trace or an expectations file), symbolic link loops, unreadable folders and
failing writes each end as one ``attnprof: error:`` line, and a failed write leaves the
previous output file as it was.
"""

from __future__ import annotations

import gzip
import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

import msgspec
import pytest

from attnprof.analysis.passes.op_stats import TREE_DEPTH
from attnprof.cli.main import main
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.trace_report import OpNode

EVENT = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}
DOC = json.dumps({"traceEvents": [EVENT, {**EVENT, "ts": 20}]}).encode()


def _one_error_line(err: str, *says: str) -> None:
    (line,) = err.strip().splitlines()
    assert line.startswith("attnprof: error:") and "Traceback" not in err
    for text in says:
        assert text in line


# ---- pipes -------------------------------------------------------------------------------
@pytest.mark.parametrize("packed", [False, True], ids=["json", "gzip"])
def test_a_fifo_is_read_like_a_file(tmp_path: Path, packed: bool,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    # What a shell's process substitution, <(zcat trace.json.gz), hands over: a pipe.
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    data = gzip.compress(DOC) if packed else DOC

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        assert main(["analyze", str(fifo), "--json", str(tmp_path / "out.json")]) == 0
    finally:
        writer.join(timeout=10)
    (report,) = msgspec.json.decode((tmp_path / "out.json").read_bytes(),
                                    type=AnalyzeRecord).reports
    assert report.events == 2 and report.regions[0].ops[0].count == 2
    assert "aten::mm" in capsys.readouterr().out


@pytest.mark.parametrize("data, says", [
    (gzip.compress(DOC), None), (DOC, None), (b"", "empty"), (b"\x1f", "not a Chrome trace"),
    (gzip.compress(DOC)[:40], "gzip"),
], ids=["gzip", "json", "empty", "one-byte", "cut-gzip"])
def test_standard_input(tmp_path: Path, data: bytes, says: str | None) -> None:
    done = subprocess.run([sys.executable, "-m", "attnprof", "analyze", "/dev/stdin"],
                          input=data, capture_output=True, check=False, timeout=120)
    err = done.stderr.decode()
    if says is None:
        assert done.returncode == 0, err
        assert "aten::mm" in done.stdout.decode()
    else:
        assert done.returncode == 2
        _one_error_line(err, "/dev/stdin", says)


# ---- paths -------------------------------------------------------------------------------
def test_a_symlink_loop_is_named_as_one(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.json").symlink_to(tmp_path / "b.json")
    (tmp_path / "b.json").symlink_to(tmp_path / "a.json")
    assert main(["analyze", str(tmp_path / "a.json")]) == 2
    err = capsys.readouterr().err
    _one_error_line(err, "a.json", "loop of symbolic links")
    assert "permission" not in err


def _run_without_root(argv: list[str]) -> tuple[int, str]:
    """``main(argv)`` in a forked child that cannot read what its owner cannot: as root it
    becomes nobody first (root reads every folder). Everything the command imports is
    imported here, before the child gives up the right to read the interpreter's files."""
    for module in ("attnprof.analysis.analyze", "attnprof.render", "attnprof.outputs",
                   "attnprof.record.family",
                   "attnprof.render.terminal", "attnprof.render.trace_report"):
        importlib.import_module(module)

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        code = 99
        try:
            os.close(read)
            sys.stderr = sys.stdout = os.fdopen(write, "w")
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            code = main(argv)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as f:
        said = f.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), said


def test_an_unreadable_folder() -> None:
    # Under a folder anyone may pass through (pytest's own are private to their owner),
    # so that the child, whoever it runs as, is refused by this folder and nothing else.
    with tempfile.TemporaryDirectory(prefix="attnprof-test-") as base:
        Path(base).chmod(0o711)
        folder = Path(base) / "traces"
        folder.mkdir()
        (folder / "t.json").write_bytes(DOC)
        folder.chmod(0o300)  # may enter, may not list
        try:
            # --no-store: nobody may not reach the suite's store either; the folder is the test.
            code, said = _run_without_root(["analyze", str(folder), "--no-store"])
        finally:
            folder.chmod(0o755)
    assert code == 2, said
    _one_error_line(said, "cannot list folder", str(folder), "permissions")


# ---- nesting -----------------------------------------------------------------------------
def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("where", ["args", "header", "trailer", "bare"])
def test_json_nested_thousands_deep_is_one_error(
        tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]) -> None:
    event = json.dumps(EVENT)
    deep = _deep(5000)
    junk = json.dumps({**EVENT, "args": {"junk": "DEEP"}}).replace('"DEEP"', deep)
    text = {
        "args": f'{{"traceEvents": [{junk}]}}',
        "header": f'{{"deviceProperties": {deep}, "traceEvents": [{event}]}}',
        "trailer": f'{{"traceEvents": [{event}], "distributedInfo": {deep}}}',
        "bare": f"[{event}, {deep}]",
    }[where]
    path = tmp_path / "deep.json"
    path.write_text(text)
    out = tmp_path / "out.json"
    assert main(["analyze", str(path), "--json", str(out)]) == 2
    _one_error_line(capsys.readouterr().err, str(path), "nests", "export the trace again")
    assert not out.exists()


def test_a_deep_header_block_is_left_out(tmp_path: Path) -> None:
    # Readable, but deeper than any header block is: left out, so the report can embed
    # what it keeps.
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"attnprof": {"variant": "DEEP"}, "traceEvents": [EVENT]})
                    .replace('"DEEP"', _deep(900)))
    out = tmp_path / "out.json"
    assert main(["analyze", str(path), "--json", str(out)]) == 0
    (report,) = msgspec.json.decode(out.read_bytes(), type=AnalyzeRecord).reports
    assert report.attnprof is None


def test_ops_nested_thousands_deep_keep_a_bounded_tree(tmp_path: Path) -> None:
    ops = [{**EVENT, "name": f"aten::op{i % 3}", "ts": 10 + i, "dur": 100_000 - 2 * i}
           for i in range(3000)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": ops}))
    out = tmp_path / "out.json"
    assert main(["analyze", str(path), "--json", str(out)]) == 0
    (report,) = msgspec.json.decode(out.read_bytes(), type=AnalyzeRecord).reports
    (region,) = report.regions
    assert sum(o.count for o in region.ops) == 3000  # the flat table counts them all
    depth, level = 0, region.tree
    while level:
        depth += 1
        level = [c for node in level for c in node.children]
    assert depth == TREE_DEPTH
    root: OpNode = region.tree[0]
    assert root.total_us == 100_000


def test_an_expectations_file_nested_thousands_deep(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.json"
    trace.write_bytes(DOC)
    expect = tmp_path / "deep.toml"
    expect.write_text(f"title = {_deep(5000)}\n")
    assert main(["check", "--expect", str(expect), str(trace)]) == 2
    _one_error_line(capsys.readouterr().err, "deep.toml", "too deeply")


# ---- writing -----------------------------------------------------------------------------
_WRITE_LIMITED = """
import resource, signal, sys
from attnprof.cli.main import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
sys.exit(main(sys.argv[2:]))
"""


def test_a_write_that_fails_keeps_the_previous_file(tmp_path: Path) -> None:
    # The kernel refuses to let the file grow past a size limit (EFBIG), as a full disk
    # refuses with ENOSPC: the same failing write, on a real file.
    trace = tmp_path / "t.json"
    trace.write_bytes(DOC)
    out = tmp_path / "out.json"
    out.write_text('{"previous": true}\n')
    # --no-store: the limit would stop the results store's writes first; --json is the test.
    done = subprocess.run([sys.executable, "-c", _WRITE_LIMITED, "512", "analyze", str(trace),
                           "--json", str(out), "--no-store"], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 2, done.stderr
    _one_error_line(done.stderr, "cannot write", str(out), "previous file is unchanged")
    assert out.read_text() == '{"previous": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "t.json"]  # no temp

    # The same command without the limit writes: the limit, not the command, failed.
    done = subprocess.run([sys.executable, "-c", _WRITE_LIMITED, str(resource.RLIM_INFINITY),
                           "analyze", str(trace), "--json", str(out)], capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert msgspec.json.decode(out.read_bytes(), type=AnalyzeRecord).reports
