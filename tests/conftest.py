"""Shared test configuration: the results store, the GPU marker, the public traces, small
workloads."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from quick_loop import OUT_OF_QUICK, OUT_OF_QUICK_MARKERS, QUICK_ANYWAY

if TYPE_CHECKING:
    from attnprof.workload.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Real torch.profiler traces (Holistic Trace Analysis, MIT), kept in the repository so a
#: clone needs nothing beside it: examples/traces/README.md says where each comes from.
PUBLIC_TRACES = REPO_ROOT / "examples" / "traces"


#: Every command a test runs saves its record to the results store: to a store of the test
#: session's own, never the user's data folder. The only place the suite sets it; the
#: environment variable reaches every subprocess the tests start.
_STORE_DIR = Path(tempfile.mkdtemp(prefix="attnprof-test-store-"))
os.environ["ATTNPROF_STORE"] = str(_STORE_DIR / "runs.db")


#: The suite tests what attnprof does on Ctrl-C, SIGTERM and SIGHUP. A suite started under
#: ``nohup``, or as a background job of a script (which ignores SIGINT), would hand those
#: signals on ignored to every attnprof it starts, and attnprof rightly keeps an ignored
#: signal ignored (tests/cli/test_signals.py): the signal tests would wait out their
#: timeouts. The suite starts from the dispositions a terminal gives.
for _name, _default in (("SIGINT", signal.default_int_handler), ("SIGHUP", signal.SIG_DFL),
                        ("SIGTERM", signal.SIG_DFL)):
    if hasattr(signal, _name) and signal.getsignal(getattr(signal, _name)) is signal.SIG_IGN:
        signal.signal(getattr(signal, _name), _default)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_STORE_DIR, ignore_errors=True)


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


_TESTS = Path(__file__).resolve().parent


def _mark_quick_loop(items: list[pytest.Item]) -> None:
    """Mark each test with why it is out of the quick loop (:data:`OUT_OF_QUICK`), or
    ``quick``."""
    for item in items:
        try:
            rel = item.path.resolve().relative_to(_TESTS).as_posix()
        except ValueError:
            rel = ""
        base = f"{rel}::{getattr(item, 'originalname', item.name)}"
        for name in () if base in QUICK_ANYWAY else OUT_OF_QUICK.get(rel, ()):
            item.add_marker(name)
        if "local_ray" in getattr(item, "fixturenames", ()):
            item.add_marker("ray")
        if not any(item.get_closest_marker(name) for name in OUT_OF_QUICK_MARKERS):
            item.add_marker("quick")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the quick loop (:func:`_mark_quick_loop`); skip ``@pytest.mark.gpu`` tests on
    machines without CUDA; run the tests on the shared local Ray instance
    (:func:`local_ray`) last, together, so that it is started once and is up only while
    they run."""
    _mark_quick_loop(items)
    items.sort(key=lambda item: "local_ray" in getattr(item, "fixturenames", ()))  # stable
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def local_ray() -> Iterator[None]:
    """One in-process local Ray instance (CPU only) for every test that runs Ray tasks:
    starting one takes seconds. (No `ray start`: in Ray 2.60 that turns on token
    authentication, which tests/sweep/test_ray_cluster.py covers.) Two CPU slots, the
    threads of this machine's torch, which a CPU point reserves whatever its --threads:
    one point at a time. No usage statistics: the test machine has no network to send them over.
    ray.init sets RAY_AUTH_MODE for a local instance: put back with the rest after."""
    ray = pytest.importorskip("ray")
    names = ("RAY_USAGE_STATS_ENABLED", "RAY_AUTH_MODE")
    saved = {name: os.environ.get(name) for name in names}
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR)
    yield
    ray.shutdown()
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def public_traces() -> Path:
    """The public trace folder; skips the test cleanly when it is absent."""
    if not PUBLIC_TRACES.is_dir() or not any(PUBLIC_TRACES.glob("*.json.gz")):
        pytest.skip(f"public traces not found at {PUBLIC_TRACES}")
    return PUBLIC_TRACES


@pytest.fixture
def left_in() -> Callable[[Path], list[str]]:
    """The names a run left in a folder, sorted, less the bytecode cache Python writes
    beside a user's module it imports (unless PYTHONDONTWRITEBYTECODE is set): not an
    output of the run."""

    def names(folder: Path) -> list[str]:
        return sorted(p.name for p in folder.iterdir() if p.name != "__pycache__")

    return names


#: Real old files: schema 1 written by attnprof 0.1 (commit 4416d1c), schema 2 by main at
#: 8cfe3d3, each on a tiny CPU workload.
V1_RECORDS = Path(__file__).resolve().parent / "fixtures" / "records"


@pytest.fixture(scope="session")
def records_by_kind(tmp_path_factory: pytest.TempPathFactory,
                    gloo_sets: dict[str, Path]) -> dict[str, object]:
    """One real record of every kind in the family, measured now on a tiny CPU workload
    (plus a schema-1 comparison upgraded on load): what renderers and the store must take."""
    from attnprof.analysis.analyze import analyze_files
    from attnprof.record.family import load_record
    from attnprof.run.compare import compare
    from attnprof.workload.settings import CaptureSpec, Settings, TimingPlan

    tiny = {"batch": 1, "heads": 2, "kv_heads": 1, "seq": 32, "head_dim": 16, "device": "cpu"}
    plan = TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3, max_samples=5,
                      min_warmup_calls=1)
    fast = Settings(plan=plan, measure_ceilings=False)
    traced = fast.replace(trace_dir=str(tmp_path_factory.mktemp("kinds")),
                          trace=CaptureSpec(steps=1))
    compared = compare(variants=["naive", "sdpa", "sdpa-efficient"], settings=fast, **tiny)
    profiled = compare(variants=["naive-inplace", "sdpa-math"], settings=traced,
                       kind="profile", **tiny)
    analysed = analyze_files([r.trace for r in profiled.results if r.trace])
    old = load_record(V1_RECORDS / "compare-v1.json")
    sweep = _tiny_sweep(fast, tiny)
    return {"compare": compared, "profile": profiled, "analyze": analysed,
            "compare-v1": old,
            "compare-statuses": _statuses(tmp_path_factory.mktemp("statuses"), tiny),
            "sweep": sweep,
            "model": _tiny_model_record(plan),
            "ranks": _rank_set_record(gloo_sets["straggler"]),
            "diff": _diff(old, compared),
            "diff-trace": _diff(*(r.analysis for r in profiled.results)),
            "check": _tiny_check(profiled),
            "limits": _tiny_limits(tiny),
            "recommend": _tiny_recommend(sweep)}


#: User variants whose rows are not ``ok`` although they measured: wrong outputs (NaN, and
#: finite but off the reference) and a hang in the second timing round (its first kept).
_MISBEHAVING = '''
import time

import torch
import torch.nn.functional as F

ROUNDS = []


def nan_out(q, k, v, **kwargs):
    return torch.full_like(q, float("nan"))


def copies_q(q, k, v, **kwargs):
    return q.clone()


def hangs_in_round_two(q, k, v, **kwargs):
    # 1 call building, 1 warming up, 3 per round (an untimed call, 2 samples).
    ROUNDS.append(1)
    if len(ROUNDS) == 6:
        time.sleep(3600)
    return F.scaled_dot_product_attention(q, k, v, **kwargs)
'''


def _statuses(folder: Path, tiny: dict[str, object]) -> object:
    """A comparison of every status a measured row can end in besides ``ok``: two
    ``wrong`` rows (one with NaN/Inf in its output) and a ``timeout`` that keeps the
    latency of the round before it, beside an ``ok`` row."""
    from attnprof.run.compare import compare
    from attnprof.workload.settings import Settings, TimingPlan

    module = folder / "misbehaving.py"
    module.write_text(_MISBEHAVING)
    plan = TimingPlan(warmup_s=0.0, min_time_s=0.0, min_samples=6, max_samples=6,
                      min_warmup_calls=1, rounds=3)
    settings = Settings(plan=plan, measure_ceilings=False, variant_timeout_s=1.0)
    return compare(variants=["sdpa", *(f"{module}:{name}" for name in
                                       ("nan_out", "copies_q", "hangs_in_round_two"))],
                   settings=settings, **tiny)


def _diff(old: object, new: object) -> object:
    """A diff of two records (attnprof 0.1's comparison against today's, same workload
    and variants), or of two traces' reports (naive-inplace against sdpa-math)."""
    from attnprof.analysis.diff import diff_records, diff_trace_reports
    from attnprof.record.diff import DiffSide
    from attnprof.record.trace_report import TraceReport

    if isinstance(old, TraceReport) and isinstance(new, TraceReport):
        return diff_trace_reports([(None, old, new)], DiffSide(ref="a", kind="trace"),
                                  DiffSide(ref="b", kind="trace"))
    return diff_records(old, new, DiffSide(ref="v1", kind="compare"),  # type: ignore[arg-type]
                        DiffSide(ref="now", kind="compare"))


def _tiny_check(profiled: object) -> object:
    """A check record of the profiled naive-inplace trace: one expectation holds, one
    does not."""
    from attnprof.analysis.check import check_expectations, pick_region
    from attnprof.record.check import CheckRecord
    from attnprof.workload.expectations import Expectations

    row = profiled.results[0]  # type: ignore[attr-defined]
    exp = msgspec_convert({"title": "naive in place", "per_forward": {"kernels": {"min": 1}},
                           "op": [{"match": "aten::softmax", "count": 7}]}, Expectations)
    region = pick_region(row.analysis, row.variant)
    return CheckRecord(expectations="expect.toml", title=exp.title, target=row.trace,
                       source=row.trace, region=region.name,
                       rows=check_expectations(exp, region), report=row.analysis,
                       status="complete")


def msgspec_convert(data: dict[str, object], type_: type) -> object:
    import msgspec

    return msgspec.convert(data, type=type_)


def _tiny_limits(tiny: dict[str, object]) -> object:
    """A limits record: one real, short search (two runs, each in a fresh worker: seq 128
    does not fit in 256 KiB, 64 does — about 300 KiB and 90 KiB)."""
    from attnprof.measure.environment import collect_environment
    from attnprof.record.limits import LimitsRecord
    from attnprof.run.limits import find_ceiling
    from attnprof.variants import resolve_variants
    from attnprof.workload.problem import Workload

    base = Workload(**{**tiny, "seq": 64}).validate()  # type: ignore[arg-type]
    (variant,) = resolve_variants(["naive"])
    ceiling = find_ceiling(base, variant, "seq", 256 << 10, step=64, maximum=128)
    return LimitsRecord(environment=collect_environment("cpu"), base=base, field="seq",
                        budget_bytes=256 << 10, ceilings=[ceiling], status="complete")


def _tiny_recommend(sweep: object) -> object:
    """The sweep's recommendation, as ``recommend --from`` makes it."""
    from attnprof.analysis.recommend import Constraints, recommend
    from attnprof.record.recommendation import Recommended
    from attnprof.record.sweep import RecommendRecord

    record = RecommendRecord.of_sweep(sweep)  # type: ignore[arg-type]
    constraints = Constraints(max_latency_ms=1e3)
    record.recommendation = Recommended(
        constraints=constraints, source="from sweep.json",
        recommendations=recommend(record.points, record.variants, constraints))
    return record


def _tiny_sweep(fast: Settings, tiny: dict[str, object]) -> object:
    """A real sweep over two sequence lengths and two modes, one variant refused in
    training, so the views show points, a failure and fits."""
    from attnprof.run.executors.inline import InlineExecutor
    from attnprof.run.sweep import plan_sweep, run_sweep
    from attnprof.workload.grid import Axis, Grid

    grid = Grid(axes=[Axis(field="mode", values=["forward", "forward+backward"]),
                      Axis(field="seq", values=[16, 32, 64])])
    fields = {k: v for k, v in tiny.items() if k not in ("seq", "device")}
    plan, _ = plan_sweep(grid, ["naive", "sdpa", "flex-eager"], fast, "cpu", **fields)
    return run_sweep(plan, InlineExecutor())


def _rank_set_record(folder: Path) -> object:
    """A rank set: the ranks of a DDP run over gloo with a planted straggler (a finding and
    a per-step straggler table), rank 2's trace replaced by bytes that are not a trace (a
    row with its error)."""
    import shutil

    from attnprof.commands.analyze import AnalyzeRequest
    from attnprof.commands.analyze import run as analyze

    copy = folder.parent / "with-a-bad-rank"
    if not copy.exists():
        shutil.copytree(folder, copy)
        (copy / "rank-2.json.gz").write_bytes(b"\x1f\x8b not really gzip")
    paths = tuple(sorted(str(p) for p in copy.iterdir()))
    return analyze(AnalyzeRequest(paths=paths, optional=frozenset(paths)))


#: The script that trains a tiny attention model with DDP over gloo and traces each rank.
GLOO_JOB = Path(__file__).resolve().parent / "ranks" / "gloo_job.py"


@pytest.fixture(scope="session")
def gloo_sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three real multi-rank sets, made once per session by ``tests/ranks/gloo_job.py``
    (world size 3, 4 profiled steps, a few seconds): ``clean``, ``straggler`` (rank 1
    sleeps 100 ms in every step) and ``divergent`` (rank 2 on the math SDPA backend)."""
    import subprocess
    import sys

    torch = pytest.importorskip("torch")
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    out = tmp_path_factory.mktemp("gloo")
    done = subprocess.run([sys.executable, str(GLOO_JOB), str(out)], capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{GLOO_JOB.name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return {name: out / name for name in ("clean", "straggler", "divergent")}


def _tiny_model_record(plan: object) -> object:
    """A model record: a two-layer Llama with grouped K/V heads, eager against SDPA in
    prefill and decode."""
    from attnprof.record.model import ModelSettings
    from attnprof.run.model import profile_model
    from attnprof.workload.model_spec import ModelSpec

    spec = ModelSpec(source="llama", layers=2, hidden=32, heads=4, kv_heads=2, vocab=64,
                     seq=16, implementations=("eager", "sdpa"), phases=("prefill", "decode"))
    return profile_model(spec=spec, settings=ModelSettings(plan=plan,  # type: ignore[arg-type]
                                                           trace_steps=1))


@contextlib.contextmanager
def _busy_cpus() -> Iterator[None]:
    """Two spinning processes per CPU for the test's duration (ended by their own ids),
    and one torch thread meanwhile: with more, every parallel op waits at its barrier for
    a parked thread and a tiny model's step takes a second."""
    import torch

    from attnprof.measure.contention import cpu_wait_s

    threads = torch.get_num_threads()
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(2 * (os.cpu_count() or 1))]
    torch.set_num_threads(1)
    try:
        # Some kernels keep the per-thread run-queue wait at 0 (no schedstats, no delay
        # accounting): there, a forced load shows none, and nothing here can be tested.
        before, t0 = cpu_wait_s(), time.perf_counter()
        while time.perf_counter() - t0 < 0.5:
            pass
        after = cpu_wait_s()
        if before is None or after is None or after - before < 0.05:
            pytest.skip("this kernel counted no run-queue wait under a forced load "
                        f"({before} -> {after} s in /proc/self/task/*/schedstat)")
        yield
    finally:
        torch.set_num_threads(threads)
        for p in spinners:
            p.kill()
        for p in spinners:
            p.wait()


@pytest.fixture
def busy_cpus() -> Callable[[], contextlib.AbstractContextManager[None]]:
    """Real contention to start where a test needs it: ``with busy_cpus(): ...``."""
    return _busy_cpus
