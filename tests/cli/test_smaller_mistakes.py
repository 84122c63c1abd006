"""The smaller ways a run went wrong quietly (issue 11, item 10).

Before: ``--csv`` mistakes were reported as ``--json`` ones; ``--json ''`` and
``--variants ''`` were accepted silently (no record; every built-in variant); a ``--trace``
folder that could not be created was found only after measuring, discarding every row;
and a user variant that hung had no time limit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.run.compare import compare
from attnprof.workload.settings import Settings, TimingPlan

FAST = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3, max_samples=5,
                                min_warmup_calls=1), measure_ceilings=False)
SMALL = ["--batch", "1", "--heads", "2", "--seq", "32", "--head-dim", "16",
         "--min-time", "0.01"]
TINY = {"batch": 1, "heads": 2, "kv_heads": 1, "seq": 32, "head_dim": 16, "device": "cpu"}


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("attnprof: error: ")
    return line


@pytest.mark.parametrize("csv", ["{tmp}", "{tmp}/missing/out.csv", ""])
def test_csv_mistakes_name_csv(csv: str, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", *SMALL, "--variants", "naive",
                 "--csv", csv.format(tmp=tmp_path)]) == 2
    line = one_line_error(capsys)
    assert "--csv" in line and "--json" not in line


@pytest.mark.parametrize(("args", "needle"), [
    (["--json", ""], "--json is an empty path"),
    (["--trace", ""], "--trace is an empty path"),
    (["--variants", ""], "argument --variants/-v: '' names nothing"),
    (["--variants", " , "], "names nothing"),
])
def test_empty_values_are_mistakes(args: list[str], needle: str, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", *SMALL, *args]) == 2
    assert needle in one_line_error(capsys)


def test_an_empty_profile_variant_is_a_mistake(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "", "--out", str(tmp_path / "t")]) == 2
    assert "names nothing" in one_line_error(capsys)
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("where", ["too-long", "under-a-file"])
def test_a_trace_folder_that_cannot_be_made_fails_before_measuring(
        where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    folder = tmp_path / ("t" * 300 if where == "too-long" else "file/traces")
    out = tmp_path / "run.json"
    assert main(["compare", *SMALL, "--variants", "naive", "--trace", str(folder),
                 "--json", str(out)]) == 2
    assert "--trace" in one_line_error(capsys)
    assert not out.exists()


#: Replaces the trace folder with a file while its memory is profiled (the phase before
#: the trace), so the trace's export fails after everything else was measured.
SPOILER = '''
import os
import shutil

import torch
import torch.nn.functional as F


def spoils(q, k, v, **kwargs):
    folder = os.environ["ATTNPROF_TEST_TRACES"]
    if torch.autograd.profiler._is_profiler_enabled and os.path.isdir(folder):
        shutil.rmtree(folder)
        open(folder, "w").close()
    return F.scaled_dot_product_attention(q, k, v, **kwargs)
'''


def test_a_trace_that_cannot_be_written_keeps_the_measurements(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    (tmp_path / "spoiler.py").write_text(SPOILER)
    monkeypatch.setenv("ATTNPROF_TEST_TRACES", str(traces))
    (row,) = compare(variants=[f"{tmp_path / 'spoiler.py'}:spoils"],
                     settings=FAST.replace(trace_dir=str(traces)), **TINY).results
    assert row.status == "ok" and row.latency_ms is not None and row.within_tolerance
    assert row.trace is None
    assert any(note.startswith("trace not written: ") for note in row.notes), row.notes


HANGING = '''
import time


def sleeps(q, k, v, **kwargs):
    time.sleep(3600)


def spins_and_swallows(q, k, v, **kwargs):
    while True:
        try:
            time.sleep(0.01)
        except Exception:  # a user's catch-all must not swallow the time limit
            pass


def hangs_once_timed(q, k, v, **kwargs):
    CALLS.append(1)
    if len(CALLS) > 2:  # after its first call and one warm-up call
        time.sleep(3600)
    return q * 1


CALLS = []
'''


def test_a_hung_variant_is_a_timeout_row_inline(tmp_path: Path) -> None:
    path = tmp_path / "hanging.py"
    path.write_text(HANGING)
    variants = [f"{path}:sleeps", "naive", f"{path}:spins_and_swallows",
                f"{path}:hangs_once_timed", "sdpa"]
    record = compare(variants=variants, settings=FAST.replace(variant_timeout_s=1.0),
                     **TINY)
    rows = {r.variant: r for r in record.results}
    for name, phase in (("sleeps", "building and warming up"),
                        ("spins_and_swallows", "building and warming up"),
                        ("hangs_once_timed", "timing, round 1")):
        row = rows[f"{path}:{name}"]
        assert row.status == "timeout", row.reason
        assert f"did not finish {phase}" in row.reason and "within 1 s" in row.reason
    assert rows["naive"].status == rows["sdpa"].status == "ok"
    assert record.status == "complete"


def test_the_time_limit_is_a_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hanging.py"
    path.write_text(HANGING)
    out = tmp_path / "run.json"
    assert main(["compare", *SMALL, "--variants", f"{path}:sleeps", "--variant-timeout",
                 "0.5", "--json", str(out)]) == 3  # a row timed out: every row kept
    text = out.read_text()
    assert '"variant_timeout_s": 0.5' in text and '"status": "timeout"' in text


def test_colliding_user_variants_get_traces_of_their_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sdpa = ("import torch.nn.functional as F\n\ndef f(q, k, v, **kw):\n"
            "    return F.scaled_dot_product_attention(q, k, v, **kw)\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.py").write_text(sdpa)
    (tmp_path / "a_x.py").write_text(sdpa)
    monkeypatch.chdir(tmp_path)
    traces = tmp_path / "traces"
    record = compare(variants=["a/x.py:f", "a_x.py:f"], **TINY,
                     settings=FAST.replace(trace_dir=str(traces)))
    paths = [r.trace for r in record.results]
    assert all(paths) and len(set(paths)) == 2
    assert sorted(p.name for p in traces.iterdir()) == sorted(Path(p).name for p in paths)
