"""Executors: a point gives the same rows in a worker process as in this one, and a
variant that kills or hangs its worker becomes a row with that status while the point's
other variants keep their results."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.record.compare import CompareRecord, VariantResult
from attnprof.run.compare import compare
from attnprof.run.executors import get_executor
from attnprof.run.executors.process import ProcessExecutor
from attnprof.run.rows import CONTENDED_NOTE
from attnprof.workload.settings import Settings, TimingPlan

TINY = {"batch": 1, "heads": 4, "kv_heads": 2, "seq": 32, "head_dim": 16, "device": "cpu"}
FAST = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3, max_samples=5,
                                min_warmup_calls=1), measure_ceilings=False)

DYING = '''
import ctypes
import os
import time

import torch.nn.functional as F


def segfault(q, k, v, **kwargs):
    ctypes.string_at(0)  # reads address 0: SIGSEGV


def exits(q, k, v, **kwargs):
    os._exit(3)


def hangs(q, k, v, **kwargs):
    time.sleep(3600)


def fine(q, k, v, **kwargs):
    return F.scaled_dot_product_attention(q, k, v, **kwargs)
'''


def _same(row: VariantResult) -> tuple[object, ...]:
    """What a row says that does not depend on the clock, nor on the moment (whether other
    processes held the CPUs while it was timed is the moment's)."""
    notes = [n for n in row.notes if not n.startswith(CONTENDED_NOTE)]
    return (row.variant, row.family, row.status, row.reason, row.max_abs_error,
            row.within_tolerance, row.sdpa_backend, row.ops, row.flops, row.bytes_moved,
            notes, row.peak_memory_bytes, row.latency_ms is not None)


def test_process_executor_gives_the_same_rows_as_inline() -> None:
    variants = ["naive", "sdpa", "sdpa-efficient", "gqa-native", "sdpa-math"]
    inline = compare(variants=variants, settings=FAST, **TINY)
    seen: list[CompareRecord] = []
    isolated = compare(variants=variants, settings=FAST, executor=get_executor("process"),
                       on_result=seen.append, **TINY)
    assert [_same(r) for r in isolated.results] == [_same(r) for r in inline.results]
    assert isolated.status == "complete" and isolated.workload == inline.workload
    assert isolated.settings == inline.settings
    # Every row reached the caller as soon as it existed, in order.
    assert [len(r.results) for r in seen] == [1, 2, 3, 4, 5, 5]


@pytest.fixture
def dying(tmp_path: Path) -> Path:
    path = tmp_path / "dying.py"
    path.write_text(DYING)
    return path


def test_a_variant_that_kills_its_worker_is_a_crashed_row(dying: Path) -> None:
    variants = ["naive", f"{dying}:segfault", "sdpa", f"{dying}:exits", f"{dying}:fine"]
    seen: list[CompareRecord] = []
    record = compare(variants=variants, settings=FAST, executor=ProcessExecutor(),
                     on_result=seen.append, **TINY)
    rows = {r.variant: r for r in record.results}
    # The caller heard of every row, crashed ones included, before the run ended.
    assert [len(r.results) for r in seen] == [1, 2, 3, 4, 5, 5]
    assert [r.variant for r in record.results] == variants  # the order asked for
    segv, exited = rows[f"{dying}:segfault"], rows[f"{dying}:exits"]
    assert segv.status == "crashed" and "SIGSEGV" in segv.reason
    assert exited.status == "crashed" and "status 3" in exited.reason
    for name in ("naive", "sdpa", f"{dying}:fine"):
        assert rows[name].status == "ok" and rows[name].latency_ms is not None
        assert rows[name].within_tolerance
    assert record.status == "complete"


def test_a_hung_variant_is_a_timeout_row(dying: Path) -> None:
    # The idle limit counts from the first variant's first phase (a worker's start-up is
    # not the variants'), so a short one stops only the hang; sdpa runs in a fresh worker.
    variants = [f"{dying}:hangs", "sdpa"]
    executor = ProcessExecutor(idle_timeout_s=2.0)
    record = compare(variants=variants, settings=FAST, executor=executor, **TINY)
    hung, ok = record.results
    assert hung.status == "timeout" and "no progress for 2 s" in hung.reason
    assert "warming up" in hung.reason  # where it hung
    assert ok.status == "ok", ok.reason


def test_a_worker_memory_limit_makes_an_oom_row() -> None:
    # naive holds B·H·S·S fp32 scores (and copies): 1·4·2048² · 4 B = 64 MiB each; SDPA's
    # flash kernel a few MiB. (The float64 reference would need 128 MiB per score copy, so
    # the accuracy check is off: the cap is for the variants.)
    variants = ["naive", "sdpa"]
    executor = ProcessExecutor(memory_limit_bytes=48 << 20)
    record = compare(variants=variants, settings=FAST.replace(check_accuracy=False),
                     executor=executor, **{**TINY, "seq": 2048})
    naive, sdpa = record.results
    assert naive.status == "oom", naive.reason
    assert sdpa.status == "ok", sdpa.reason


#: A variant that reports whether torch's compiler stack was loaded when it first ran.
NO_COMPILER = '''
import sys

import torch.nn.functional as F


def sdpa_if_no_compiler(q, k, v, **kwargs):
    if "torch._dynamo" in sys.modules or "torch._inductor" in sys.modules:
        raise RuntimeError("torch._dynamo was imported before the variants ran")
    return F.scaled_dot_product_attention(q, k, v, **kwargs)
'''


def test_a_worker_measures_memory_without_loading_torchs_compiler(tmp_path: Path) -> None:
    # torch.profiler.profile's start imports torch._inductor and torch._dynamo (seconds of
    # every worker's start-up); the memory measurement does without them.
    path = tmp_path / "no_compiler.py"
    path.write_text(NO_COMPILER)
    record = compare(variants=[f"{path}:sdpa_if_no_compiler"], settings=FAST,
                     executor=ProcessExecutor(memory_limit_bytes=1 << 30), **TINY)
    (row,) = record.results
    assert row.status == "ok", row.reason
    assert row.peak_memory_bytes and "aten::scaled_dot_product_attention" in row.ops


def test_a_capped_worker_loads_torchs_compiler_before_its_cap_for_flex() -> None:
    # flex_attention imports torch._dynamo (~70 MB of address space) on its first call:
    # torch's code, loaded before the cap, so that a 64 MiB cap is the variant's memory.
    executor = ProcessExecutor(memory_limit_bytes=64 << 20)
    record = compare(variants=["flex-eager"], settings=FAST.replace(cpu_allocator="system"),
                     executor=executor, **TINY)
    (row,) = record.results
    assert row.status == "ok", row.reason
    assert row.within_tolerance


def test_a_worker_exits_with_its_status_after_its_atexit_hooks_with_the_collector_frozen(
        ) -> None:
    # With torch loaded, shutdown's full collections took half a second of every worker
    # while its parent waited; they are skipped, and shutdown otherwise runs as usual.
    code = ("import atexit, gc\n"
            "from attnprof.run.executors.worker import finish\n"
            "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
            "finish(3)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 3 and done.stdout.strip() == "frozen True", done.stderr


def test_unknown_executor_is_a_usage_error() -> None:
    from attnprof.errors import UsageError

    with pytest.raises(UsageError, match="unknown executor 'gpu'"):
        get_executor("gpu")


STOPPING = '''
import os
import signal

import torch.nn.functional as F

CALLS = []


def steady(q, k, v, **kwargs):
    return F.scaled_dot_product_attention(q, k, v, **kwargs)


def stopped_in_round_two(q, k, v, **kwargs):
    CALLS.append(1)
    # 2 calls warming up, then 3 per round (an untimed call and 2 samples): call 6 is the
    # first of round two.
    if len(CALLS) == 6:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, as a terminal sends it
    return steady(q, k, v, **kwargs)
'''


def test_ctrl_c_in_a_worker_keeps_the_samples_taken(tmp_path: Path) -> None:
    path = tmp_path / "stopping.py"
    path.write_text(STOPPING)
    plan = TimingPlan(warmup_s=0.0, min_time_s=0.0, min_samples=6, max_samples=6,
                      min_warmup_calls=1, rounds=3)
    saved: list[CompareRecord] = []
    with pytest.raises(KeyboardInterrupt):
        compare(variants=[f"{path}:steady", f"{path}:stopped_in_round_two"],
                settings=FAST.replace(plan=plan), executor=ProcessExecutor(),
                on_result=saved.append, **TINY)
    record = saved[-1]
    assert record.status == "partial"
    steady, stopped = record.results
    # Round two starts with the stopped variant (each round starts one further on).
    assert (steady.status, steady.latency_ms.count) == ("ok", 2)  # type: ignore[union-attr]
    assert (stopped.status, stopped.latency_ms.count) == ("ok", 2)  # type: ignore[union-attr]
