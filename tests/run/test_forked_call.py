"""One call in a forked child while the parent works meanwhile
(:func:`attnprof.run.executors.forked.call_in_child`): the result, every way the child can
end, and a parent that stops early, each with the child gone afterwards."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import msgspec
import pytest

from attnprof.errors import UsageError
from attnprof.run.executors.forked import ChildDied, ChildFailed, call_in_child

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


class Answer(msgspec.Struct):
    pid: int
    values: list[float]
    name: str


def _children() -> set[int]:
    """This process's children still there (running or not yet reaped)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():
                found.add(int(entry))
    return found


def test_the_call_runs_in_the_child_while_meanwhile_runs_here() -> None:
    ran = []
    got = call_in_child(lambda send: Answer(os.getpid(), [1.5, float("inf"), -0.0], "ü\x1b"),
                        returns=Answer, meanwhile=lambda: ran.append(os.getpid()))
    assert ran == [os.getpid()]  # meanwhile: here
    assert got.pid != os.getpid()  # the call: elsewhere
    assert got.values == [1.5, float("inf"), -0.0] and got.name == "ü\x1b"  # exact


def test_a_usage_error_in_the_child_is_one_here() -> None:
    def bad(send) -> Answer:
        raise UsageError("trace file 'x.json' is empty; export the trace again")

    with pytest.raises(UsageError, match=r"^trace file 'x.json' is empty; export"):
        call_in_child(bad, returns=Answer, meanwhile=lambda: None)


def test_another_exception_comes_with_the_childs_traceback() -> None:
    def bug(send) -> Answer:
        raise ZeroDivisionError("a bug in the analysis")

    with pytest.raises(ChildFailed, match=r"(?s)Traceback.*ZeroDivisionError: a bug in"):
        call_in_child(bug, returns=Answer, meanwhile=lambda: None)


def test_a_result_msgpack_cannot_hold_is_a_failure_not_a_hang() -> None:
    with pytest.raises(ChildFailed, match="TypeError"):
        call_in_child(lambda send: object(), returns=Answer, meanwhile=lambda: None)


@pytest.mark.parametrize(("end", "said"), [
    (lambda send: os._exit(3), "exited with status 3 before it answered"),
    (lambda send: os.kill(os.getpid(), signal.SIGSEGV), "killed by SIGSEGV (signal 11)"),
    (lambda send: os.kill(os.getpid(), signal.SIGKILL), "killed by SIGKILL (signal 9)"),
], ids=["exit", "segfault", "oom-killer"])
def test_a_child_that_dies_without_answering_says_how(end, said: str) -> None:
    before = _children()
    with pytest.raises(ChildDied, match=re.escape(said)):
        call_in_child(end, returns=Answer, meanwhile=lambda: None)
    assert _children() == before  # reaped


def test_a_failure_meanwhile_stops_the_child_at_once() -> None:
    before = _children()

    def slow(send) -> Answer:
        time.sleep(60)
        return Answer(0, [], "")

    def meanwhile() -> None:
        raise UsageError("--store x: not an attnprof store")

    started = time.perf_counter()
    with pytest.raises(UsageError, match="not an attnprof store"):
        call_in_child(slow, returns=Answer, meanwhile=meanwhile)
    assert time.perf_counter() - started < 10
    assert _children() == before


def test_output_buffered_before_the_fork_is_written_once(tmp_path) -> None:
    """The parent's unflushed stdout must not be flushed again by the child's exit, and
    what the child prints on stderr arrives."""
    script = tmp_path / "s.py"
    script.write_text(
        "import sys\n"
        "from attnprof.run.executors.forked import call_in_child\n"
        "sys.stdout.write('before ')\n"
        "def call(send):\n"
        "    print('note from the child', file=sys.stderr)\n"
        "    return 7\n"
        "print(call_in_child(call, returns=int, meanwhile=lambda: None))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout == "before 7\n"
    assert done.stderr == "note from the child\n"


def test_parts_arrive_in_order_before_the_result_while_the_child_goes_on() -> None:
    heard: list[tuple[Answer, float]] = []

    def call(send) -> Answer:
        for i in range(3):
            send(Answer(os.getpid(), [float(i)] * 50_000, f"part {i}"))  # 450 KB each
        time.sleep(0.3)  # still working after the parts
        return Answer(os.getpid(), [], "done")

    started = time.perf_counter()
    got = call_in_child(call, returns=Answer, meanwhile=lambda: None, part=Answer,
                        on_part=lambda a: heard.append((a, time.perf_counter() - started)))
    assert [a.name for a, _ in heard] == ["part 0", "part 1", "part 2"]
    assert heard[2][0].values[-1] == 2.0 and len(heard[2][0].values) == 50_000
    assert got.name == "done"
    assert all(at < 0.25 for _, at in heard)  # heard while the child was still working


def test_a_part_nobody_expects_is_a_failure() -> None:
    def call(send) -> int:
        send(1)
        return 2

    with pytest.raises(ChildFailed, match="no part was expected"):
        call_in_child(call, returns=int, meanwhile=lambda: None)


def test_a_failure_in_on_part_stops_the_child() -> None:
    before = _children()

    def call(send) -> int:
        send(1)
        time.sleep(60)
        return 2

    def on_part(value: int) -> None:
        raise KeyboardInterrupt  # Ctrl-C while drawing what arrived

    with pytest.raises(KeyboardInterrupt):
        call_in_child(call, returns=int, meanwhile=lambda: None, part=int, on_part=on_part)
    assert _children() == before


def test_where_no_process_can_be_forked_both_run_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    order: list[str] = []
    heard: list[int] = []

    def call(send) -> Answer:
        order.append("call")
        send(5)
        return Answer(os.getpid(), [1.0], "here")

    got = call_in_child(call, returns=Answer, meanwhile=lambda: order.append("meanwhile"),
                        part=int, on_part=heard.append)
    assert order == ["meanwhile", "call"] and heard == [5]
    assert got.pid == os.getpid() and got.name == "here"
