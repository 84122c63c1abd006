"""``attnprof analyze`` of one trace reads and analyses it in a forked child while the
parent opens the store and imports the views (``cli/analyze_cmd._worth_a_child``): the same
report and record as in one process, on real traces; every way out of it (a bad store or
output found meanwhile, a crash, a stop) ends as in one process, with no child left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnprof.cli.analyze_cmd import INLINE_ENV

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"
TRACES = ("cpu_only.json.gz", "a100_nccl.json.gz", "mi250_rocm_minitoy.json.gz",
          "triton_example.json.gz", "v100_training_large.json.gz")

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or len(os.sched_getaffinity(0)) < 2,
                                reason="the child is used with fork and two CPUs")


def _attnprof(*args: str, inline: bool = False, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != INLINE_ENV}
    if inline:
        env[INLINE_ENV] = "1"
    return subprocess.run([sys.executable, "-m", "attnprof", *args], env=env,
                          capture_output=True, text=True, timeout=120, **kwargs)


def _record(path: Path) -> dict:
    record = json.loads(path.read_text())
    del record["run_id"], record["created"]  # the run's own: differ between any two runs
    return record


def test_a_fresh_command_with_one_trace_uses_the_child() -> None:
    probe = ("import sys; from attnprof.commands.analyze import AnalyzeRequest as R; "
             "from attnprof.cli.analyze_cmd import _worth_a_child as worth; "
             "one, two = R(paths=('a.json',)), R(paths=('a.json', 'b.json')); "
             "first = worth(one); "
             "import attnprof.analysis.analyze; "
             "print(first, worth(two), worth(one))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != INLINE_ENV})
    # one trace in a fresh process; never two traces, nor once the analysis is imported
    assert done.stdout.split() == ["True", "False", "False"]


@pytest.mark.parametrize("trace", TRACES)
def test_the_child_gives_what_one_process_gives(trace: str, tmp_path: Path) -> None:
    outs = {}
    for inline in (False, True):
        out = tmp_path / f"{inline}.json"
        done = _attnprof("analyze", str(EXAMPLES / trace), "--json", str(out), "--no-store",
                         inline=inline)
        assert done.returncode in (0, 3), done.stderr
        text = done.stdout.replace(str(out), "OUT")
        outs[inline] = (done.returncode, text, done.stderr, _record(out))
    assert outs[False] == outs[True]
    assert outs[False][1].startswith(f"trace {EXAMPLES / trace}")


@pytest.fixture(scope="module")
def own_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace attnprof captured itself (its metadata, no contention read): ``profile``."""
    out = tmp_path_factory.mktemp("own")
    done = _attnprof("profile", "naive", "--batch", "1", "--heads", "2", "--seq", "64",
                     "--head-dim", "16", "--min-time", "0.01", "--steps", "2",
                     "--out", str(out), "--no-store")
    assert done.returncode == 0, done.stderr
    (trace,) = out.glob("*.json*")
    return trace


def test_an_attnprof_trace_reads_the_same_in_the_child(own_trace: Path,
                                                       tmp_path: Path) -> None:
    said = {}
    for inline in (False, True):
        out = tmp_path / f"{inline}.json"
        done = _attnprof("analyze", str(own_trace), "--json", str(out), "--no-store",
                         inline=inline)
        assert done.returncode == 0, done.stderr
        said[inline] = (done.stdout.replace(str(out), "OUT"), _record(out))
    assert said[False] == said[True]
    assert "attnprof::naive" in said[False][0] and "findings (" in said[False][0]


def test_a_bad_store_found_meanwhile_fails_as_before(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    store.write_bytes(b"not a database at all " * 100)
    out = tmp_path / "a.json"
    lines = {}
    for inline in (False, True):
        done = _attnprof("analyze", str(EXAMPLES / "v100_training_large.json.gz"),
                         "--json", str(out), "--store", str(store), inline=inline)
        assert done.returncode == 2 and done.stdout == ""
        lines[inline] = done.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.db"]  # nothing written
    assert lines[False] == lines[True] and lines[False].count("\n") == 1
    assert str(store) in lines[False]


def test_the_input_as_the_output_fails_before_anything_is_written(tmp_path: Path) -> None:
    trace = tmp_path / "t.json.gz"
    trace.write_bytes((EXAMPLES / "cpu_only.json.gz").read_bytes())
    done = _attnprof("analyze", str(trace), "--json", str(trace), "--no-store")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert trace.read_bytes() == (EXAMPLES / "cpu_only.json.gz").read_bytes()


def test_an_unreadable_trace_says_the_same_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2, "name": "a"},')
    said = {inline: _attnprof("analyze", str(bad), "--no-store", inline=inline)
            for inline in (False, True)}
    assert said[False].returncode == said[True].returncode == 2
    assert said[False].stderr == said[True].stderr
    assert said[False].stderr.startswith(f"attnprof: error: {bad} is not valid trace JSON")


def test_a_crash_in_the_child_is_one_line_naming_the_file(tmp_path: Path) -> None:
    """A segfault while reading (a native bug): one line that names the file and how the
    reading died, status 2, nothing written; not a silent end or a traceback."""
    out = tmp_path / "a.json"
    crash = ("import os, signal, sys\n"
             "import attnprof.commands.analyze as command\n"
             "command.run = lambda *a, **k: os.kill(os.getpid(), signal.SIGSEGV)\n"
             "from attnprof.cli.main import main\n"
             f"sys.exit(main(['analyze', {str(EXAMPLES / 'cpu_only.json.gz')!r}, "
             f"'--json', {str(out)!r}, '--no-store']))\n")
    done = subprocess.run([sys.executable, "-c", crash], capture_output=True, text=True,
                          timeout=60,
                          env={k: v for k, v in os.environ.items() if k != INLINE_ENV})
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and not out.exists()
    line = done.stderr.strip().splitlines()[-1]
    assert "cpu_only.json.gz" in line and "killed by SIGSEGV (signal 11)" in line
    assert INLINE_ENV in line  # how to see where


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_stop_while_the_child_reads_takes_it_down(how: int, tmp_path: Path) -> None:
    out = tmp_path / "stopped-marker.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "attnprof", "analyze",
         str(EXAMPLES / "v100_training_large.json.gz"), "--json", str(out), "--no-store"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={k: v for k, v in os.environ.items() if k != INLINE_ENV})
    deadline = time.monotonic() + 30
    while len(_processes_with(str(out))) < 2 and time.monotonic() < deadline:
        time.sleep(0.002)  # until the child is forked
    assert len(_processes_with(str(out))) == 2
    # Ctrl-C reaches the terminal's whole process group; SIGTERM (kill PID) the parent.
    if how == signal.SIGINT:
        os.killpg(process.pid, how)
    else:
        process.send_signal(how)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + how, stderr
    assert stdout == "" and not out.exists()
    assert not list(tmp_path.iterdir())  # no temporary file either
    assert stderr.strip().splitlines()[-1].startswith("attnprof: ")
    time.sleep(0.05)
    assert _processes_with(str(out)) == []  # the child is gone too


@pytest.mark.parametrize("closed", [">&-", "2>&-", "<&-", ">&- 2>&-"])
@pytest.mark.parametrize("inline", [False, True], ids=["child", "inline"])
def test_a_closed_standard_stream_drops_what_goes_there(closed: str, inline: bool,
                                                        tmp_path: Path) -> None:
    """The shell closed stdout, stderr or stdin: the report (or the messages) go nowhere,
    the run finishes and writes its outputs, status 0; never a traceback about ``None``."""
    out = tmp_path / "a.json"
    command = (f"{sys.executable} -m attnprof analyze {EXAMPLES / 'cpu_only.json.gz'} "
               f"--json {out} --store {tmp_path / 'runs.db'} {closed}")
    env = {k: v for k, v in os.environ.items() if k != INLINE_ENV}
    if inline:
        env[INLINE_ENV] = "1"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                          timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["kind"] == "analyze"
    assert "Traceback" not in done.stderr
    if closed == "2>&-":
        assert done.stdout.startswith("trace ") and "stored as run" in done.stdout
    if closed == "<&-":
        assert "findings (" in done.stdout


@pytest.mark.parametrize("inline", [False, True], ids=["child", "inline"])
def test_the_stored_run_keeps_the_folders_git_state(inline: bool, tmp_path: Path) -> None:
    """The git state is read while the child works (the store records it); the same
    commit and dirty flag as when read at the save."""
    from attnprof.store import open_store

    repo = tmp_path / "repo"
    repo.mkdir()
    git = {"cwd": repo, "check": True, "capture_output": True, "text": True}
    subprocess.run(["git", "init", "-q"], **git)
    (repo / "train.py").write_text("print(1)\n")
    subprocess.run(["git", "add", "train.py"], **git)
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "x"],
                   **git)
    head = subprocess.run(["git", "rev-parse", "HEAD"], **git).stdout.strip()
    store = tmp_path / "runs.db"
    for dirty in (False, True):
        if dirty:
            (repo / "train.py").write_text("print(2)\n")
        done = _attnprof("analyze", str(EXAMPLES / "cpu_only.json.gz"), "--store", str(store),
                         "--label", f"dirty={dirty}", inline=inline, cwd=repo)
        assert done.returncode == 0, done.stderr
        with open_store(store, create=False) as opened:
            run = opened.find(f"dirty={dirty}")
        assert (run.git_commit, run.git_dirty, run.cwd) == (head, dirty, str(repo))
