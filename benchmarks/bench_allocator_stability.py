"""Are CPU medians a property of the variant, or of the allocator's history?

Runs the same ``attnprof compare`` in several fresh processes for each allocator state
(``--cpu-allocator reuse|fresh|system``), the states alternating so that machine drift
reaches them alike, and prints each run's medians, the ratio between the two variants,
the ratio's spread across runs ((max - min) / median), the minor page faults per call the
record keeps beside each row, and the machine's 1-minute load average before each run
(other work on a 2-core machine slows multi-threaded ops unevenly, which no allocator state
can undo: read the spread of quiet runs). ``system`` leaves glibc malloc as attnprof found it,
which is how every run was measured before the state was set: its spread is the "before".

    python benchmarks/bench_allocator_stability.py                       # 6 processes each
    python benchmarks/bench_allocator_stability.py --states reuse --processes 6 \\
        --variants sdpa-math,naive --min-time 1

Goal: the sdpa-math/naive ratio's spread at most 15% across 6 processes in the default
state. Run it under ``flock /tmp/attnprof-cpu.lock`` on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def one_run(variants: str, state: str, min_time: float, folder: Path, index: int,
            extra: list[str]) -> dict[str, Any]:
    """One fresh ``attnprof compare`` process; its record's medians and page faults."""
    out = folder / f"{state}-{index}.json"
    command = [sys.executable, "-m", "attnprof", "compare", "--variants", variants,
               "--min-time", str(min_time), "--cpu-allocator", state, "--json", str(out),
               *extra]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    record = json.loads(out.read_text())
    rows = {r["variant"]: r for r in record["results"] if r["latency_ms"]}
    return {name: {"median_ms": r["latency_ms"]["median"],
                   "faults_per_call": r["minor_faults_per_call"]} for name, r in rows.items()}


def load() -> float:
    """The 1-minute load average (0 where the platform has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


def spread(values: list[float]) -> float:
    """(max - min) / median: how far apart the runs land, relative to a typical one."""
    return (max(values) - min(values)) / statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="sdpa-math,naive")
    parser.add_argument("--states", default="system,reuse,fresh")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--min-time", type=float, default=1.0)
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON")
    parser.add_argument("extra", nargs="*", help="more attnprof compare flags (after --)")
    args = parser.parse_args()
    first, second = args.variants.split(",")[:2]
    states = args.states.split(",")
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in states}
    with tempfile.TemporaryDirectory(prefix="attnprof-alloc-") as tmp:
        for i in range(args.processes):
            for state in states:  # alternate: drift reaches every state alike
                before = load()
                runs[state].append(one_run(args.variants, state, args.min_time, Path(tmp), i,
                                           args.extra))
                m = runs[state][-1]
                m["load"] = before
                print(f"{state:7} run {i + 1} (load {before:.2f}): "
                      f"{first} {m[first]['median_ms']:7.2f} ms "
                      f"({m[first]['faults_per_call']:8.1f} faults/call), {second} "
                      f"{m[second]['median_ms']:7.2f} ms ({m[second]['faults_per_call']:8.1f} "
                      f"faults/call), ratio {m[first]['median_ms'] / m[second]['median_ms']:.3f}",
                      flush=True)
    summary = {}
    print(f"\n{args.processes} fresh processes per state; ratio = {first} / {second}")
    print(f"{'state':8} {first + ' ms':>22} {second + ' ms':>22} {'ratio':>14} {'spread':>7} "
          f"{'faults/call':>22}")
    for state, results in runs.items():
        a = [m[first]["median_ms"] for m in results]
        b = [m[second]["median_ms"] for m in results]
        ratios = [x / y for x, y in zip(a, b, strict=True)]
        faults = [m[first]["faults_per_call"] for m in results]
        faults_b = [m[second]["faults_per_call"] for m in results]
        summary[state] = {"medians_ms": {first: a, second: b}, "ratios": ratios,
                          "ratio_spread": spread(ratios), "load": [m["load"] for m in results],
                          "faults_per_call": {first: faults, second: faults_b}}
        print(f"{state:8} {min(a):9.2f}..{max(a):<9.2f}  {min(b):9.2f}..{max(b):<9.2f}  "
              f"{min(ratios):5.3f}..{max(ratios):<5.3f} {spread(ratios):7.1%} "
              f"{statistics.median(faults):9.1f} / {statistics.median(faults_b):<9.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
