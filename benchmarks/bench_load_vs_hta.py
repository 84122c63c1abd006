"""attnprof vs Holistic Trace Analysis: load a large trace and break its kernels down.

Usage::

    pip install traceinsight -c constraints.txt      # HTA, imported as ``hta``
    python benchmarks/bench_load_vs_hta.py [--trace PATH] [--repeat 3]

Each side runs in a fresh subprocess (alternating, ``--repeat`` times) that imports its
library first, then measures only the work:

* attnprof: ``load_trace(path)`` + ``kernel_breakdown(trace)``
* HTA: ``TraceAnalysis(trace_dir=...)`` + ``get_gpu_kernel_breakdown(visualize=False)``;
  HTA wants a directory of rank traces, so the file is symlinked into a temporary one.

Memory: after the imports the worker resets its peak-RSS mark (``/proc/self/clear_refs``)
and reads its RSS as the baseline; "peak increase" is the peak RSS during the work minus
that baseline, "total peak" the peak RSS itself. HTA parses in a forked pool worker, so
its figure is the larger of the parent's peak and the pool child's peak (``RUSAGE_CHILDREN``):
a lower bound of HTA's real footprint, i.e. favourable to HTA. Figures are medians.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_TRACE = (
    Path(__file__).resolve().parents[1].parent / "shared/traces/public/v100_training_large.json.gz"
)
GOAL_SPEEDUP = 5.0
GOAL_MEMORY = 0.5


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS


def _work_attnprof(trace: Path) -> dict[str, Any]:
    from attnprof.analysis.passes.breakdown import kernel_breakdown
    from attnprof.trace import load_trace

    def run() -> dict[str, Any]:
        t0 = time.perf_counter()
        loaded = load_trace(trace)
        t1 = time.perf_counter()
        b = kernel_breakdown(loaded)
        t2 = time.perf_counter()
        return {
            "load_s": t1 - t0,
            "breakdown_s": t2 - t1,
            "events": len(loaded.events),
            "kernels": b.count,
        }

    return _measure(run)


def _work_hta(trace: Path) -> dict[str, Any]:
    import logging

    from hta.trace_analysis import TraceAnalysis

    logging.disable(logging.WARNING)
    folder = Path(tempfile.mkdtemp(prefix="hta-bench-"))
    (folder / trace.name).symlink_to(trace)

    def run() -> dict[str, Any]:
        t0 = time.perf_counter()
        analysis = TraceAnalysis(trace_dir=str(folder))
        t1 = time.perf_counter()
        kinds, _per_kernel = analysis.get_gpu_kernel_breakdown(visualize=False)
        t2 = time.perf_counter()
        return {"load_s": t1 - t0, "breakdown_s": t2 - t1, "kernel_types": len(kinds)}

    try:
        return _measure(run)
    finally:
        (folder / trace.name).unlink()
        folder.rmdir()


def _measure(run: Any) -> dict[str, Any]:
    gc.collect()
    _reset_peak()
    base = _status_kib("VmRSS")
    out = run()
    peak = max(_status_kib("VmHWM"), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    out.update(baseline_mib=base / 1024, peak_mib=peak / 1024, increase_mib=(peak - base) / 1024)
    return out


def _worker(side: str, trace: Path) -> None:
    t0 = time.perf_counter()
    work = {"attnprof": _work_attnprof, "hta": _work_hta}[side]
    result = work(trace)
    result["import_and_run_s"] = time.perf_counter() - t0
    print(json.dumps(result))


def _run(side: str, trace: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", side, "--trace", str(trace)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{side} worker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--worker", choices=["attnprof", "hta"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    trace = args.trace.resolve()
    if args.worker:
        _worker(args.worker, trace)
        return
    if not trace.is_file():
        raise SystemExit(f"trace not found: {trace}")
    runs: dict[str, list[dict[str, Any]]] = {"attnprof": [], "hta": []}
    load_before = os.getloadavg()[0]
    for i in range(args.repeat):
        for side, results in runs.items():
            r = _run(side, trace)
            results.append(r)
            print(f"run {i + 1} {side:8s} load {r['load_s']:.2f} s, ", end="")
            print(f"breakdown {r['breakdown_s']:.2f} s,", end="")
            print(f" peak +{r['increase_mib']:.0f} MiB (total {r['peak_mib']:.0f} MiB)", flush=True)
    _report(runs, trace, (load_before, os.getloadavg()[0]))


def _report(runs: dict[str, list[dict[str, Any]]], trace: Path, load: tuple[float, float]) -> None:
    def med(side: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[side])

    def work(side: str) -> float:
        return statistics.median(r["load_s"] + r["breakdown_s"] for r in runs[side])

    size = trace.stat().st_size / 2**20
    print(f"\ntrace: {trace.name} ({size:.1f} MiB on disk), {runs['attnprof'][0]['events']} events")
    print(f"cpus: {os.cpu_count()}, repeats: {len(runs['hta'])}, ", end="")
    print(f"load average {load[0]:.2f} -> {load[1]:.2f}")
    head = ("median", "load s", "breakdown s", "total s", "peak +MiB", "peak MiB")
    print("{:9s} {:>7s} {:>12s} {:>8s} {:>10s} {:>9s}".format(*head))
    for side in runs:
        cells = (med(side, "load_s"), med(side, "breakdown_s"), work(side))
        print("{:9s} {:7.2f} {:12.3f} {:8.2f}".format(side, *cells), end="")
        print(f" {med(side, 'increase_mib'):10.0f} {med(side, 'peak_mib'):9.0f}")
    speedup = work("hta") / work("attnprof")
    memory = med("attnprof", "increase_mib") / med("hta", "increase_mib")
    print(f"\nspeed-up (HTA time / attnprof time): {speedup:.1f}x (goal >= {GOAL_SPEEDUP:g}x)")
    print(f"peak RSS increase (attnprof / HTA): {memory:.2f} (goal <= {GOAL_MEMORY:g})")
    met = speedup >= GOAL_SPEEDUP and memory <= GOAL_MEMORY
    print("goals met" if met else "goals NOT met")


if __name__ == "__main__":
    main()
