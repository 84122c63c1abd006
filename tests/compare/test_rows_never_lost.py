"""Rows that are never lost or wrong (issue 21, items 3-6).

Before: a timeout in the memory/accuracy/trace phase threw away the latency already
measured; NaN, all-zero and copied-``q`` outputs were ``ok`` (NaN's error ``null`` in the
JSON); a variant calling ``torch.set_num_threads(1)`` changed every later variant's timing
without a word; a variant raising ``KeyboardInterrupt`` ended the whole run with exit 130
and no record. Now a failure keeps what the phases before it measured, a wrong output is a
``wrong`` row that budgets count and recommendations skip, torch's settings are put back
after every phase and the row says what changed, and only a real stop signal stops a run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attnprof.analysis.budgets import check_budgets
from attnprof.render.compare_table import render_compare
from attnprof.render.csv_table import render_csv
from attnprof.run.compare import compare
from attnprof.run.executors.process import ProcessExecutor
from attnprof.workload.budgets import load_budgets
from attnprof.workload.settings import Settings, TimingPlan

TINY = {"batch": 1, "heads": 2, "kv_heads": 1, "seq": 32, "head_dim": 16, "device": "cpu"}

MISBEHAVING = '''
import os
import signal
import time

import torch
import torch.nn.functional as F

CALLS = []


def fine(q, k, v, **kwargs):
    return F.scaled_dot_product_attention(q, k, v, **kwargs)


def _profiled():
    return torch.autograd.profiler._is_profiler_enabled


def hangs_checking_accuracy(q, k, v, **kwargs):
    # The accuracy check is the first call after the memory profile.
    CALLS.append("profiled" if _profiled() else "plain")
    if CALLS[-1] == "plain" and "profiled" in CALLS:
        time.sleep(3600)
    return fine(q, k, v, **kwargs)


def hangs_in_round_two(q, k, v, **kwargs):
    # 2 calls building and warming up, 3 per round (an untimed call, 2 samples).
    CALLS.append("round")
    if CALLS.count("round") == 6:
        time.sleep(3600)
    return fine(q, k, v, **kwargs)


def nan_out(q, k, v, **kwargs):
    return torch.full_like(q, float("nan"))


def inf_in_one(q, k, v, **kwargs):
    out = fine(q, k, v, **kwargs)
    out[0, 0, 0, 0] = float("inf")
    return out


def zeros(q, k, v, **kwargs):
    return torch.zeros_like(q)


def copies_q(q, k, v, **kwargs):
    return q.clone()


def one_thread(q, k, v, **kwargs):
    torch.set_num_threads(1)
    return fine(q, k, v, **kwargs)


def meddles(q, k, v, **kwargs):
    torch.set_num_threads(torch.get_num_threads() + 1)
    torch.set_default_dtype(torch.float64)
    torch.backends.cuda.enable_math_sdp(False)
    torch.use_deterministic_algorithms(True)
    torch.set_anomaly_enabled(True)
    torch.randn(3)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return fine(q, k, v, **kwargs)


SEEN = []


def reports(q, k, v, **kwargs):
    SEEN.append((torch.get_num_threads(), torch.get_default_dtype(),
                 torch.backends.cuda.math_sdp_enabled(),
                 torch.are_deterministic_algorithms_enabled(), torch.is_anomaly_enabled()))
    return fine(q, k, v, **kwargs)


def raises_keyboard_interrupt(q, k, v, **kwargs):
    raise KeyboardInterrupt


def raises_generator_exit(q, k, v, **kwargs):
    raise GeneratorExit


class Odd(BaseException):
    pass


def raises_a_base_exception(q, k, v, **kwargs):
    raise Odd("not an Exception")


def swallows_a_real_stop(q, k, v, **kwargs):
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
    except BaseException:
        pass  # caught and swallowed: the run must stop all the same
    return fine(q, k, v, **kwargs)
'''

FAST = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3, max_samples=5,
                                min_warmup_calls=1), measure_ceilings=False)
#: Six samples in three rounds of two, one warm-up call: calls can be counted exactly.
THREE_ROUNDS = FAST.replace(plan=TimingPlan(warmup_s=0.0, min_time_s=0.0, min_samples=6,
                                            max_samples=6, min_warmup_calls=1, rounds=3))


@pytest.fixture
def misbehaving(tmp_path: Path) -> Path:
    path = tmp_path / "misbehaving.py"
    path.write_text(MISBEHAVING)
    return path


def _module(path: Path):  # type: ignore[no-untyped-def]
    return next(m for m in list(sys.modules.values())
                if getattr(m, "__file__", None) == str(path))


# ----- item 3: a timeout in a later phase keeps what finished -------------------------------
def test_a_timeout_checking_accuracy_keeps_latency_and_memory(misbehaving: Path) -> None:
    settings = FAST.replace(variant_timeout_s=1.0)
    hung, ok = compare(variants=[f"{misbehaving}:hangs_checking_accuracy", "sdpa"],
                       settings=settings, **TINY).results
    assert hung.status == "timeout"
    assert "did not finish checking accuracy within 1 s" in hung.reason
    assert hung.latency_ms is not None and hung.latency_ms.count >= 3
    assert hung.peak_memory_bytes is not None and hung.max_abs_error is None
    assert any("kept what finished before it: latency, peak memory; not taken: accuracy"
               in n for n in hung.notes), hung.notes
    assert ok.status == "ok" and ok.within_tolerance


def test_a_timeout_in_a_round_keeps_the_rounds_before(misbehaving: Path) -> None:
    settings = THREE_ROUNDS.replace(variant_timeout_s=1.0)
    hung, ok = compare(variants=[f"{misbehaving}:hangs_in_round_two", "sdpa"],
                       settings=settings, **TINY).results
    assert hung.status == "timeout" and "timing, round 2 of 3" in hung.reason
    assert hung.latency_ms is not None and hung.latency_ms.count == 2
    assert any("latency from 2 of 6 samples" in n for n in hung.notes), hung.notes
    assert ok.status == "ok" and ok.latency_ms is not None and ok.latency_ms.count == 6


# ----- item 4: a wrong output is a status of its own ---------------------------------------
@pytest.mark.parametrize(("name", "says"), [
    ("nan_out", "holds 1,024 NaN or infinite values"),
    ("inf_in_one", "holds 1 NaN or infinite value;"),
    ("zeros", "off the float64 reference by up to"),
    ("copies_q", "off the float64 reference by up to"),
])
def test_a_wrong_output_is_wrong_everywhere(name: str, says: str, misbehaving: Path,
                                            tmp_path: Path) -> None:
    from rich.console import Console

    record = compare(variants=["sdpa", f"{misbehaving}:{name}"], settings=FAST, **TINY)
    ok, wrong = record.results
    assert ok.status == "ok" and wrong.status == "wrong" and says in wrong.reason
    assert wrong.within_tolerance is False and wrong.latency_ms is not None
    nonfinite = name in ("nan_out", "inf_in_one")
    assert (wrong.max_abs_error is None) == nonfinite
    assert wrong.nonfinite_values == {"nan_out": 1024, "inf_in_one": 1}.get(name, 0)
    # The JSON says why the error is null; the table and the CSV show the status.
    path = tmp_path / "run.json"
    record.save(path)
    row = json.loads(path.read_text())["results"][1]
    assert row["status"] == "wrong" and row["nonfinite_values"] == wrong.nonfinite_values
    console = Console(record=True, width=200)
    render_compare(record, console)
    table = console.export_text()
    assert "wrong" in table and ("NaN/Inf" in table) == nonfinite
    csv_row = render_csv(record).splitlines()[2]
    assert ",wrong," in csv_row
    # A budget on it fails, whatever it bounds.
    budgets_file = tmp_path / "budgets.toml"
    budgets_file.write_text(f'[[budget]]\nvariant = "{misbehaving}:{name}"\n'
                            'latency_ms = { max = 1e9 }\n')
    budgets = load_budgets(budgets_file)
    report = check_budgets(budgets, [(record.workload, r) for r in record.results])
    assert not report.ok and report.rows[0].observed == "wrong"


# ----- item 5: torch's global state is put back after every phase --------------------------
def test_torch_settings_a_variant_changes_are_put_back_and_noted(misbehaving: Path) -> None:
    threads = torch.get_num_threads()
    handler = signal.getsignal(signal.SIGINT)
    variants = [f"{misbehaving}:reports", f"{misbehaving}:meddles", "sdpa-math",
                "mha-module", f"{misbehaving}:reports"]
    record = compare(variants=variants, settings=THREE_ROUNDS, **TINY)
    rows = {r.variant: r for r in record.results}
    meddler = rows[f"{misbehaving}:meddles"]
    assert meddler.status == "ok"
    (note,) = [n for n in meddler.notes if n.startswith("changed torch's global state")]
    for change in (f"torch threads {threads} → {threads + 1}",
                   "default dtype float32 → float64", "SDPA math backend on → off",
                   "deterministic algorithms off → on", "anomaly mode off",
                   "RNG state: drew random numbers (its output is random)", "SIGINT handler"):
        assert change in note, note
    # sdpa-math still has its backend, and every call of the reporter, before and after the
    # meddler's, in every round, saw the run's own settings.
    for plain in ("sdpa-math", "mha-module"):  # mha-module draws its weights: no news
        assert rows[plain].status == "ok" and not any(
            "changed torch's" in n for n in rows[plain].notes), rows[plain].notes
    assert set(_module(misbehaving).SEEN) == {(threads, torch.float32, True, False, False)}
    assert torch.get_num_threads() == threads and signal.getsignal(signal.SIGINT) is handler


def test_one_thread_in_a_variant_does_not_slow_the_others(misbehaving: Path) -> None:
    threads = torch.get_num_threads()
    record = compare(variants=[f"{misbehaving}:one_thread", f"{misbehaving}:reports"],
                     settings=THREE_ROUNDS, **TINY)
    one, reporter = record.results
    if threads > 1:
        assert any(f"torch threads {threads} → 1" in n for n in one.notes), one.notes
    assert {seen[0] for seen in _module(misbehaving).SEEN} == {threads}
    assert reporter.status == "ok" and torch.get_num_threads() == threads


def test_a_module_that_changes_settings_on_import_is_put_back(tmp_path: Path) -> None:
    threads = torch.get_num_threads()
    path = tmp_path / "at_import.py"
    path.write_text("import torch\nimport torch.nn.functional as F\n"
                    "torch.set_num_threads(torch.get_num_threads() + 1)\n"
                    "def attn(q, k, v, **kw):\n    return F.scaled_dot_product_attention("
                    "q, k, v, **kw)\n")
    (row,) = compare(variants=[f"{path}:attn"], settings=FAST, **TINY).results
    assert row.status == "ok" and torch.get_num_threads() == threads
    assert any(n.startswith(f"importing {path} changed torch's global state") and
               f"torch threads {threads} → {threads + 1}" in n for n in row.notes), row.notes


# ----- item 6: only a real stop signal stops a run -----------------------------------------
RAISERS = ["raises_keyboard_interrupt", "raises_generator_exit", "raises_a_base_exception"]


def _check_raisers(record, misbehaving: Path) -> None:  # type: ignore[no-untyped-def]
    rows = {r.variant: r for r in record.results}
    assert record.status == "complete"
    assert rows["sdpa"].status == "ok"
    assert "raised by the variant itself (no Ctrl-C" in rows[
        f"{misbehaving}:raises_keyboard_interrupt"].reason
    assert rows[f"{misbehaving}:raises_generator_exit"].reason.startswith("GeneratorExit")
    assert rows[f"{misbehaving}:raises_a_base_exception"].reason == "Odd: not an Exception"
    assert all(rows[f"{misbehaving}:{n}"].status == "error" for n in RAISERS)


def test_any_exception_from_a_variant_is_its_row_inline(misbehaving: Path) -> None:
    variants = [*(f"{misbehaving}:{n}" for n in RAISERS), "sdpa"]
    _check_raisers(compare(variants=variants, settings=FAST, **TINY), misbehaving)


def test_any_exception_from_a_variant_is_its_row_in_a_worker(misbehaving: Path) -> None:
    variants = [*(f"{misbehaving}:{n}" for n in RAISERS), "sdpa"]
    record = compare(variants=variants, settings=FAST, executor=ProcessExecutor(), **TINY)
    _check_raisers(record, misbehaving)


def test_a_keyboard_interrupt_from_a_variant_does_not_end_attnprof(misbehaving: Path,
                                                                   tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    result = subprocess.run(
        [sys.executable, "-m", "attnprof", "compare", "--batch", "1", "--heads", "2",
         "--seq", "32", "--head-dim", "16", "--min-time", "0.01", "--variants",
         f"{misbehaving}:raises_keyboard_interrupt,naive", "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert result.returncode == 3, result.stderr  # not 130: the run went on; a row erred
    rows = json.loads(out.read_text())["results"]
    assert [r["status"] for r in rows] == ["error", "ok"]


def test_a_keyboard_interrupt_while_importing_a_variant_is_a_usage_error(
        tmp_path: Path) -> None:
    from attnprof.errors import UsageError

    path = tmp_path / "stops.py"
    path.write_text("raise KeyboardInterrupt\n")
    with pytest.raises(UsageError, match=r"importing .* failed with KeyboardInterrupt"):
        compare(variants=[f"{path}:attention"], settings=FAST, **TINY)


def test_a_real_stop_the_variant_swallows_still_stops_the_run(misbehaving: Path) -> None:
    saved = []
    with pytest.raises(KeyboardInterrupt, match="stopped by SIGTERM"):
        compare(variants=["sdpa", f"{misbehaving}:swallows_a_real_stop"], settings=FAST,
                on_result=saved.append, **TINY)
    assert saved == []  # stopped while building and warming up: nothing had finished
