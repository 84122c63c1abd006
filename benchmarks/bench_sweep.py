"""Acceptance run of ``attnprof sweep``: naive, sdpa-math and sdpa-flash over seq
256..2048x2 on the device's default workload, timed as a whole process.

Goal (2-core CPU): the whole command, worker start-ups included, in under 3 minutes, with
peak-memory exponents near 2 for naive and sdpa-math (they hold the S×S scores) and near 1
for sdpa-flash (it never does), each with its R², in the terminal, the record and the plot.

    python benchmarks/bench_sweep.py [--out DIR] [--seq 256..2048x2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnprof.record.sweep import SweepRecord

VARIANTS = "naive,sdpa-math,sdpa-flash"
GOAL_S = 180.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", default="256..2048x2")
    parser.add_argument("--out", type=Path, default=None, help="keep the outputs here")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="attnprof-bench-sweep-"))
    out.mkdir(parents=True, exist_ok=True)
    record_path, plot = out / "sweep.json", out / "sweep.svg"
    command = [sys.executable, "-m", "attnprof", "sweep", "--variants", VARIANTS,
               "--seq", args.seq, "--json", str(record_path), "--plot", str(plot)]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    print(done.stdout)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return done.returncode
    record = SweepRecord.load(record_path)
    print(f"whole command: {elapsed:.1f} s (goal < {GOAL_S:.0f} s) — "
          f"{'met' if elapsed < GOAL_S else 'MISSED'}")
    svg = plot.read_text()
    for variant, want in (("naive", 2.0), ("sdpa-math", 2.0), ("sdpa-flash", 1.0)):
        for quantity in ("peak_memory_bytes", "latency_ms"):
            fit = record.fit(variant, quantity, "seq")  # type: ignore[arg-type]
            if fit is None:
                print(f"{variant} {quantity}: no fit")
                continue
            ci = f"[{fit.ci95[0]:.2f}, {fit.ci95[1]:.2f}]" if fit.ci95 else "—"
            r2 = f"{fit.r_squared:.4f}" if fit.r_squared is not None else "—"
            note = ""
            if quantity == "peak_memory_bytes":
                near = abs(fit.exponent - want) <= 0.2
                note = f" (want ≈ {want:g}: {'yes' if near else 'NO'}; in plot: " \
                       f"{f'seq^{fit.exponent:.2f}' in svg})"
            print(f"{variant:>11} {quantity:>17}: seq^{fit.exponent:.3f} 95% {ci} R² {r2}"
                  f"{note}")
    print(f"outputs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
