"""How long a user waits to be told of a mistake in a flag, whole process.

Usage::

    python benchmarks/bench_mistake_reply.py [--repeat 10] [--baseline-src OLD/src]

Each measurement is one fresh ``python -m attnprof`` process, timed from start to exit
(interpreter start-up and imports included), for each mistake below; every run must exit 2
with one ``attnprof: error:`` line naming the value. With ``--baseline-src`` (the ``src``
folder of another checkout, e.g. ``git worktree add /tmp/old COMMIT``), the same commands
run on that code too, in pairs whose order alternates, so a busy machine slows both alike;
the table gives each side's median and range and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: (arguments, what the error line must say)
MISTAKES = [
    (["compare", "--seq", "0"], "--seq must be a positive integer"),
    (["compare", "--heads", "8", "--kv-heads", "3"], "does not divide"),
    (["compare", "--min-time", "nan"], "--min-time must be positive"),
    (["profile", "sdpa", "--dtype", "fp8"], "unknown dtype"),
    (["compare", "--threads", "0"], "--threads must be"),
    (["sweep", "--seq", "16,32", "--rounds", "0"], "--rounds must be a positive integer"),
]


def once(src: Path, argv: list[str], said: str) -> float:
    """Seconds of one process answering ``argv`` with the code in ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "attnprof", *argv, "--no-store"],
                          capture_output=True, text=True, env=env, check=False, timeout=300)
    took = time.perf_counter() - start
    lines = done.stderr.strip().splitlines()
    if done.returncode != 2 or len(lines) != 1 or said not in lines[0]:
        raise SystemExit(f"{' '.join(argv)} on {src}: exit {done.returncode}, {done.stderr!r}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--baseline-src", type=Path, help="the src folder of the code before")
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1] / "src"
    sides = {"this code": here, **({"baseline": args.baseline_src} if args.baseline_src
                                   else {})}
    for src in sides.values():  # compiled bytecode, as after pip install
        for argv, said in MISTAKES:
            once(src, argv, said)
    print(f"{'mistake':<45} " + " ".join(f"{name:>24}" for name in sides)
          + ("  ratio" if len(sides) == 2 else ""))
    for argv, said in MISTAKES:
        times: dict[str, list[float]] = {name: [] for name in sides}
        for i in range(args.repeat):
            order = list(sides.items()) if i % 2 == 0 else list(sides.items())[::-1]
            for name, src in order:
                times[name].append(once(src, argv, said))
        cells = [f"{statistics.median(t):.3f} s ({min(t):.2f}-{max(t):.2f})"
                 for t in times.values()]
        ratio = ""
        if len(sides) == 2:
            before, now = (statistics.median(times[k]) for k in ("baseline", "this code"))
            ratio = f"  {before / now:.1f}x"
        print(f"{' '.join(argv):<45} " + " ".join(f"{c:>24}" for c in cells) + ratio)


if __name__ == "__main__":
    main()
