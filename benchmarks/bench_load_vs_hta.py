"""attnprof vs Holistic Trace Analysis, whole process: the command a user runs against the
script a user would write.

Usage::

    pip install traceinsight -c constraints.txt      # HTA, imported as ``hta``
    python benchmarks/bench_load_vs_hta.py [--trace PATH] [--repeat 9]

    # or HTA kept out of attnprof's environment (its numpy, pandas...): a private folder
    pip install --target /tmp/hta-site traceinsight
    python benchmarks/bench_load_vs_hta.py --hta-site /tmp/hta-site

Each measurement is one fresh process, timed from start to exit (interpreter start-up and
imports included), with the peak RSS the kernel reports for it:

* attnprof: ``attnprof analyze TRACE --json OUT`` (the console script; terminal report to
  /dev/null): load, the whole analysis (regions, op trees, kernels, findings), the JSON;
* HTA: ``python -c "<import hta; TraceAnalysis(trace_dir=...); get_gpu_kernel_breakdown()>"``
  (HTA wants a folder of rank traces, so the file is symlinked into a temporary one): load
  and the kernel breakdown only, much less than attnprof does.

Both import from compiled bytecode, as after ``pip install`` (``PYTHONDONTWRITEBYTECODE`` is
dropped from their environment), and each runs once untimed first. The two run in pairs,
alternating which goes first, ``--repeat`` times, so a busy machine
slows both alike. The table gives medians and the spread (min-max) of each, the ratio of
the medians and the range of the per-pair ratios. HTA parses in forked pool workers, so
its peak is the largest of the process's and its children's peaks (``wait4`` reports the
process; the script reports its children): still a lower bound, favourable to HTA.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_TRACE = (
    Path(__file__).resolve().parents[1] / "examples/traces/v100_training_large.json.gz"
)
GOAL_SECONDS = 0.40
GOAL_SPEEDUP = 12.0  # issue 32 (issue 10 asked 9x)

_HTA_SCRIPT = """
import json, logging, resource, sys
from hta.trace_analysis import TraceAnalysis
logging.disable(logging.WARNING)
analysis = TraceAnalysis(trace_dir=sys.argv[1])
kinds, per_kernel = analysis.get_gpu_kernel_breakdown(visualize=False)
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"kernel_kinds": len(kinds), "children_peak_kib": children}))
"""


def _timed(argv: list[str], cwd: Path, site: Path | None = None) -> tuple[float, int, str]:
    """Run ``argv`` to completion: (wall seconds, peak RSS in KiB, stdout); ``site``, a
    folder first on its import path."""
    # Both sides import from compiled bytecode, as after a pip install (a sandbox may set
    # PYTHONDONTWRITEBYTECODE, which would recompile attnprof's editable source every run).
    env = _child_env()
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH"))
                                            if p)
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, cwd=cwd, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv[:3])} ... failed ({proc.returncode}):\n{err[-3000:]}")
        out.seek(0)
        return seconds, usage.ru_maxrss, out.read().decode(errors="replace")


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if env.get("PYTHONPATH"):
        # The runs start in a temporary folder: a relative entry (PYTHONPATH=src, to time a
        # checkout's code over the installed one) would silently stop pointing at it.
        env["PYTHONPATH"] = os.pathsep.join(
            str(Path(p).resolve()) if p else p for p in env["PYTHONPATH"].split(os.pathsep))
    return env


def _timed_code(folder: Path) -> str:
    """Where the attnprof the runs import lives (the checkout's, or the installed one)."""
    where = subprocess.run([sys.executable, "-c", "import attnprof; print(attnprof.__file__)"],
                           cwd=folder, env=_child_env(), capture_output=True, text=True)
    return where.stdout.strip() or where.stderr.strip()[-200:]


def _attnprof(trace: Path, folder: Path) -> dict[str, Any]:
    cli = Path(sys.executable).with_name("attnprof")
    argv = [str(cli)] if cli.exists() else [sys.executable, "-m", "attnprof"]
    out = folder / "attnprof.json"
    seconds, peak, _ = _timed([*argv, "analyze", str(trace), "--json", str(out)], folder)
    report = json.loads(out.read_text())["reports"][0]
    return {"s": seconds, "peak_mib": peak / 1024, "kernels": report["breakdown"]["count"],
            "events": report["events"]}


def _hta(trace: Path, folder: Path, site: Path | None) -> dict[str, Any]:
    ranks = folder / "hta"
    ranks.mkdir(exist_ok=True)
    link = ranks / trace.name
    if not link.exists():
        link.symlink_to(trace)
    seconds, peak, stdout = _timed([sys.executable, "-c", _HTA_SCRIPT, str(ranks)], folder,
                                   site)
    said = json.loads(stdout.strip().splitlines()[-1])
    return {"s": seconds, "peak_mib": max(peak, said["children_peak_kib"]) / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--repeat", type=int, default=9, help="pairs of runs (default 9)")
    parser.add_argument("--hta-site", type=Path, default=None,
                        help="a folder HTA was installed into (pip install --target): put "
                             "on HTA's import path only, so attnprof keeps its own numpy")
    args = parser.parse_args()
    trace = args.trace.resolve()
    if not trace.is_file():
        raise SystemExit(f"trace not found: {trace}")
    runs: dict[str, list[dict[str, Any]]] = {"attnprof": [], "hta": []}
    load = [os.getloadavg()[0]]
    folder = Path(tempfile.mkdtemp(prefix="attnprof-vs-hta-"))
    try:
        print(f"attnprof code: {_timed_code(folder)}", flush=True)
        # Once each, untimed: bytecode is written and file caches are warm for both.
        site = args.hta_site.resolve() if args.hta_site else None
        _hta(trace, folder, site)
        _attnprof(trace, folder)
        for i in range(args.repeat):
            order = ("attnprof", "hta") if i % 2 == 0 else ("hta", "attnprof")
            for side in order:
                r = _attnprof(trace, folder) if side == "attnprof" else _hta(trace, folder, site)
                runs[side].append(r)
            a, h = runs["attnprof"][-1], runs["hta"][-1]
            print(f"pair {i + 1}: attnprof {a['s']:.3f} s ({a['peak_mib']:.0f} MiB), "
                  f"HTA {h['s']:.3f} s ({h['peak_mib']:.0f} MiB), {h['s'] / a['s']:.1f}x",
                  flush=True)
            load.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    _report(runs, trace, load)


def _report(runs: dict[str, list[dict[str, Any]]], trace: Path, load: list[float]) -> None:
    def column(side: str, key: str) -> list[float]:
        return [r[key] for r in runs[side]]

    first = runs["attnprof"][0]
    size = trace.stat().st_size / 2**20
    print(f"\ntrace: {trace.name} ({size:.1f} MiB on disk), {first['events']} events, "
          f"{first['kernels']} device events")
    print(f"cpus: {os.cpu_count()}, pairs: {len(runs['hta'])}, load average "
          f"{min(load):.2f}-{max(load):.2f}")
    print(f"{'whole process':14s} {'median s':>9s} {'min-max s':>13s} {'peak MiB':>9s}")
    for side in runs:
        s, peak = column(side, "s"), column(side, "peak_mib")
        print(f"{side:14s} {statistics.median(s):9.3f} {min(s):6.3f}-{max(s):6.3f} "
              f"{statistics.median(peak):9.0f}")
    a, h = statistics.median(column("attnprof", "s")), statistics.median(column("hta", "s"))
    pairs = [y / x for x, y in zip(column("attnprof", "s"), column("hta", "s"), strict=True)]
    print(f"\nspeed-up (HTA median / attnprof median): {h / a:.1f}x; per pair "
          f"{min(pairs):.1f}x-{max(pairs):.1f}x (goal >= {GOAL_SPEEDUP:g}x)")
    print(f"attnprof median {a:.3f} s (goal <= {GOAL_SECONDS:g} s); peak RSS "
          f"{statistics.median(column('attnprof', 'peak_mib')):.0f} MiB vs HTA "
          f"{statistics.median(column('hta', 'peak_mib')):.0f} MiB")
    met = a <= GOAL_SECONDS and h / a >= GOAL_SPEEDUP
    print("goals met" if met else "goals NOT met")


if __name__ == "__main__":
    main()
