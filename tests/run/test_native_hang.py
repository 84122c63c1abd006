"""The process executor stops a hang its worker cannot (issue 21, item 7).

Before, ``--executor process --variant-timeout 15`` let a C-level spin run 150 s and a Python
loop with SIGALRM ignored run 240 s: the limit was the worker's own alarm, whose Python
handler never runs inside a native call and does nothing once ignored. Now the parent
watches each phase's time and kills the worker; the variant is a ``timeout`` row that
keeps what its finished phases measured, and the other variants run in a new worker.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from attnprof.run.compare import compare
from attnprof.run.executors.process import ProcessExecutor
from attnprof.workload.settings import Settings, TimingPlan

TINY = {"batch": 1, "heads": 2, "kv_heads": 1, "seq": 32, "head_dim": 16, "device": "cpu"}
FAST = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3, max_samples=5,
                                min_warmup_calls=1), measure_ceilings=False)

SPIN_C = "void spin(void) { volatile unsigned long i = 0; for (;;) i++; }\n"

HANGING = '''
import ctypes
import os
import signal

import torch
import torch.nn.functional as F

_SPIN = ctypes.CDLL(os.environ["ATTNPROF_TEST_SPIN_LIB"]).spin
CALLS = []


def fine(q, k, v, **kwargs):
    return F.scaled_dot_product_attention(q, k, v, **kwargs)


def spins_in_c_checking_accuracy(q, k, v, **kwargs):
    # The accuracy check is the first call after the memory profile; from then on the
    # variant never returns from C, where no Python signal handler can run.
    CALLS.append(torch.autograd.profiler._is_profiler_enabled)
    if CALLS[-1] is False and True in CALLS:
        _SPIN()
    return fine(q, k, v, **kwargs)


def loops_with_the_alarm_ignored(q, k, v, **kwargs):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    while True:
        pass
'''


@pytest.fixture(scope="module")
def spin_lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the spinning library")
    folder = tmp_path_factory.mktemp("spin")
    (folder / "spin.c").write_text(SPIN_C)
    lib = folder / "libspin.so"
    subprocess.run([compiler, "-O0", "-shared", "-fPIC", "-o", str(lib), str(folder / "spin.c")],
                   check=True)
    return lib


@pytest.mark.slow
def test_the_parent_kills_a_worker_its_variant_hangs_in_native_code(
        spin_lib: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNPROF_TEST_SPIN_LIB", str(spin_lib))
    path = tmp_path / "hanging.py"
    path.write_text(HANGING)
    spins, loops = f"{path}:spins_in_c_checking_accuracy", f"{path}:loops_with_the_alarm_ignored"
    start = time.monotonic()
    record = compare(variants=[spins, loops, "sdpa"], settings=FAST.replace(variant_timeout_s=2.0),
                     executor=ProcessExecutor(), **TINY)
    took = time.monotonic() - start
    rows = {r.variant: r for r in record.results}
    for name, phase in ((spins, "checking accuracy"), (loops, "building and warming up")):
        row = rows[name]
        assert row.status == "timeout", row
        assert f"did not finish {phase} within 2 s (--variant-timeout)" in row.reason
        assert "the worker was killed" in row.reason
    # The spinning variant had been timed and profiled before it hung: that stays.
    kept = rows[spins]
    assert kept.latency_ms is not None and kept.peak_memory_bytes is not None
    assert any("kept what finished before it: latency, peak memory; not taken: accuracy"
               in n for n in kept.notes), kept.notes
    assert rows["sdpa"].status == "ok" and record.status == "complete"
    assert took < 120  # seconds per hang, not the hours the hangs would have run
