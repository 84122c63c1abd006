"""The intra-op threads variants are measured on (``--threads``): one on a CPU unless asked
(compare, profile, sweep, model; tests/models/test_model_cli.py checks model's),
recorded as asked (settings) and as had (environment), the same in a worker process, put
back after the run, and every mistake one line with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attnprof.cli.main import main
from attnprof.errors import UsageError
from attnprof.formatting import threads_text
from attnprof.run.compare import run_point
from attnprof.run.point import Point
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings, TimingPlan, default_threads, parse_threads

TINY = ["--batch", "1", "--heads", "2", "--seq", "32", "--head-dim", "16", "--min-time",
        "0.01", "--variants", "naive,sdpa", "--no-store"]


def _torch_default_threads() -> int:
    """What a fresh process's torch takes by default (this one's tests may have moved it)."""
    done = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                          capture_output=True, text=True, check=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"})
    return int(done.stdout)


@pytest.mark.parametrize("executor", ["inline", "process"])
def test_a_cpu_run_is_measured_on_one_thread_unless_asked(executor: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    out = tmp_path / "one.json"
    before = torch.get_num_threads()
    assert main(["compare", *TINY, "--executor", executor, "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["settings"]["threads"] == 1 and record["environment"]["threads"] == 1
    assert record["environment"]["cpus"] == len(os.sched_getaffinity(0))
    assert torch.get_num_threads() == before  # the pool is put back
    shown = " ".join(capsys.readouterr().out.split())  # the caption may wrap
    assert f"· {threads_text(1, record['environment']['cpus'])} · torch" in shown, shown


def test_threads_all_is_what_torch_takes_by_default(tmp_path: Path) -> None:
    out = tmp_path / "all.json"
    done = subprocess.run([sys.executable, "-m", "attnprof", "compare", *TINY, "--threads",
                           "all", "--json", str(out)], capture_output=True, text=True,
                          timeout=600, env={k: v for k, v in os.environ.items()
                                            if k != "OMP_NUM_THREADS"})
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    assert record["settings"]["threads"] is None
    assert record["environment"]["threads"] == _torch_default_threads()


def test_the_library_measures_on_the_settings_threads_and_puts_the_pool_back() -> None:
    before = torch.get_num_threads()
    wanted = 2 if before == 1 else 1
    point = Point(workload=Workload(batch=1, heads=2, seq=32, head_dim=16).validate(),
                  variants=("sdpa",),
                  settings=Settings(threads=wanted, measure_ceilings=False,
                                    plan=TimingPlan(warmup_s=0.0, min_time_s=0.01,
                                                    min_samples=3, max_samples=5)))
    record = run_point(point)
    assert record.environment.threads == wanted and record.results[0].status == "ok"
    assert torch.get_num_threads() == before
    # None (the library's default) leaves the pool as the process has it.
    record = run_point(Point(workload=point.workload, variants=("sdpa",),
                             settings=point.settings.replace(threads=None)))
    assert record.environment.threads == before


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1e3", "nan", "inf", "2.5", "", "99999",
                                   str(2**64)])
def test_a_bad_thread_count_is_one_line(value: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    assert main(["compare", *TINY, "--threads", value, "--json", str(out)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("attnprof: error: --threads ") and ("'all'" in line or "or all"
                                                               in line), line
    assert not out.exists()


@pytest.mark.parametrize(("text", "count"), [("1", 1), ("4", 4), (" 2 ", 2), ("all", None),
                                             ("ALL", None)])
def test_thread_counts_read_as_given(text: str, count: int | None) -> None:
    assert parse_threads(text) == count


def test_the_library_refuses_the_same_counts() -> None:
    for bad in (0, -3, True, 10**6):
        with pytest.raises(UsageError, match="--threads"):
            Settings(threads=bad).validate()  # type: ignore[arg-type]


def test_defaults_per_device_and_how_the_caption_says_it() -> None:
    assert default_threads("cpu") == 1 and default_threads("cuda:0") is None
    assert threads_text(1, 2) == "1 thread (2 CPUs: --threads all uses every one)"
    assert threads_text(2, 2) == "2 threads" and threads_text(1, None) == "1 thread"
    assert threads_text(4, 2) == "4 threads (more than the 2 CPUs: they take turns)"


def test_more_threads_than_cpus_is_the_runs_own_wait_not_other_processes() -> None:
    # --threads 8 on 2 CPUs: the threads take turns and wait for a CPU 200-400% of the
    # time. The note said "other processes held the CPUs", with none running: it must name
    # the run's own threads and the fix instead, in the rows and beside the ceilings.
    from attnprof.measure.ceilings import measure_ceilings
    from attnprof.measure.contention import cpu_wait_s
    from attnprof.measure.threads import measuring_threads
    from attnprof.run.rows import contention_notes

    if cpu_wait_s() is None:
        pytest.skip("this kernel does not count run-queue waits (no schedstat)")
    cpus = len(os.sched_getaffinity(0))
    with measuring_threads(cpus * 4):
        (note,) = contention_notes(3.5)
        ceilings = measure_ceilings("cpu", "float32")
    assert f"its {cpus * 4} intra-op threads outnumber the {cpus} CPUs" in note, note
    assert f"use --threads {cpus} or fewer" in note and "other processes" not in note
    assert f"measured while its {cpus * 4} threads took turns on {cpus} CPUs" in \
        ceilings.method, ceilings.method
    with measuring_threads(1):  # within the CPUs, a wait is other processes' load
        (note,) = contention_notes(0.5)
    assert "other processes held the CPUs" in note
