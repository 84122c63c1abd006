"""Reports: how long a person waits for ``attnprof show`` and for a large sweep's HTML.

Two goals (2-core CPU, a quiet machine):

* ``attnprof show R.json`` of a compare record in under 0.3 s, as a whole process (start-up
  and imports included), measured paired and alternated with ``python -c pass`` (the
  interpreter alone) so a busy machine slows both alike; the in-process render beside it.
* a 20-variant × 30-point sweep record rendered to HTML in under 2 s, the file under 5 MB;
  in-process, with the Vega runtime cached (every report after the first) and cold (the
  first report after installing vl-convert builds it, about a second), and as a whole
  ``attnprof report`` process.

    python benchmarks/bench_report.py [--compare RECORD.json] [--rounds 15]

Without ``--compare`` a small comparison is measured first (a few seconds). The sweep record
is made here: 20 variants × seq 64..64·30, 50 latency samples per row, a few rows failed,
fitted by the real scaling pass.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnprof.analysis.scaling import analyse_sweep
from attnprof.measure.environment import collect_environment
from attnprof.record.compare import Latency, VariantResult
from attnprof.record.sweep import SweepPoint, SweepRecord
from attnprof.workload.grid import Axis, Grid
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings

SHOW_GOAL_S, HTML_GOAL_S, HTML_GOAL_BYTES = 0.3, 2.0, 5 * 10**6
VARIANTS, POINTS, SAMPLES = 20, 30, 50


def big_sweep() -> SweepRecord:
    """20 variants × 30 sequence lengths: latency ∝ seq^(1 + v/20), memory ∝ seq^(1..2),
    50 samples each with a little noise; every fifth variant out of memory at the top."""
    env = collect_environment("cpu")
    seqs = [64 * (i + 1) for i in range(POINTS)]
    names = [f"variant-{v:02d}" for v in range(VARIANTS)]
    points = []
    for i, seq in enumerate(seqs):
        rows = []
        for v, name in enumerate(names):
            if v % 5 == 4 and i >= POINTS - 3:
                rows.append(VariantResult(variant=name, family="bench", status="oom",
                                          reason="out of memory: tried to allocate 4 GiB"))
                continue
            median = 1e-3 * seq ** (1 + v / VARIANTS)
            samples = [median * (1 + 0.02 * ((k * 7919) % 11 - 5) / 5) for k in range(SAMPLES)]
            q = statistics.quantiles(samples, n=4)
            lat = Latency(median=statistics.median(samples), iqr=q[2] - q[0], q1=q[0], q3=q[2],
                          min=min(samples), max=max(samples), count=SAMPLES, noisy=False,
                          samples=samples)
            rows.append(VariantResult(variant=name, family="bench", status="ok",
                                      latency_ms=lat, peak_memory_bytes=int(1024 * seq ** (
                                          1 + v % 2)), max_abs_error=1e-6, tolerance=1e-4,
                                      within_tolerance=True))
        points.append(SweepPoint(index=i, coords={"seq": seq}, workload=Workload(seq=seq),
                                 results=rows, environment=env))
    record = SweepRecord(environment=env, base=Workload(), grid=Grid(axes=[
        Axis(field="seq", values=seqs)]), variants=names, settings=Settings(),
        flops_convention="bench", points=points, status="complete")
    return analyse_sweep(record)


def _run(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def paired(command: list[str], baseline: list[str], rounds: int) -> tuple[float, float]:
    """Medians of ``command`` and ``baseline``, run alternately ``rounds`` times each."""
    a, b = [], []
    for _ in range(rounds):
        a.append(_run(command))
        b.append(_run(baseline))
    return statistics.median(a), statistics.median(b)


def _compare_record(out: Path) -> Path:
    path = out / "compare.json"
    subprocess.run([sys.executable, "-m", "attnprof", "compare", "--variants",
                    "naive,naive-inplace,sdpa,sdpa-math,gqa-native", "--seq", "256",
                    "--min-time", "0.1", "--json", str(path)], check=True,
                   stdout=subprocess.DEVNULL)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", type=Path, help="a compare record to show")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="attnprof-bench-report-"))
    record = args.compare or _compare_record(out)

    show = [sys.executable, "-m", "attnprof", "show", str(record)]
    whole, python = paired(show, [sys.executable, "-c", "pass"], args.rounds)
    from attnprof.record.family import load_record
    from attnprof.render import TerminalRenderer

    started = time.perf_counter()
    TerminalRenderer().render(load_record(record))
    inside = time.perf_counter() - started
    print(f"show (compare record): {whole:.3f} s whole process (median of {args.rounds}, "
          f"alternated with `python -c pass`: {python:.3f} s); {inside * 1e3:.0f} ms to load "
          f"and render in process; goal < {SHOW_GOAL_S} s: "
          f"{'met' if whole < SHOW_GOAL_S else 'NOT met'}")

    sweep = big_sweep()
    path = out / "sweep.json"
    sweep.save(path)
    from attnprof.render.html import render_html

    # A cache folder of the benchmark's own: empty for the first report (cold), filled by it
    # for the second and for the `attnprof report` processes (which inherit it), whatever
    # the user's cache holds.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="attnprof-bench-cache-")
    timings = {}
    for label in ("cold runtime cache", "warm runtime cache"):
        started = time.perf_counter()
        html = render_html([load_record(path)])
        timings[label] = time.perf_counter() - started
    size = len(html.encode())
    report = [sys.executable, "-m", "attnprof", "report", str(path), "-o", str(out / "s.html")]
    whole_report, python = paired(report, [sys.executable, "-c", "pass"], max(3, args.rounds // 3))
    warm = timings["warm runtime cache"]
    print(f"HTML of a {VARIANTS}-variant × {POINTS}-point sweep: {warm:.2f} s in process "
          f"(load + render, runtime cached; {timings['cold runtime cache']:.2f} s the first "
          f"time), {whole_report:.2f} s as `attnprof report` (python alone {python:.3f} s); "
          f"{size / 1e6:.2f} MB; goals < {HTML_GOAL_S} s and < {HTML_GOAL_BYTES / 1e6:.0f} MB: "
          f"{'met' if warm < HTML_GOAL_S and size < HTML_GOAL_BYTES else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
