"""A 64-rank set read whole-process: ``attnprof analyze DIR`` against HTA's TraceAnalysis.

Usage::

    pip install traceinsight -c constraints.txt      # HTA, imported as ``hta``
    python benchmarks/bench_ranks_vs_hta.py [--ranks 64] [--repeat 3] [--keep DIR]

The set is made from the public two-rank GPU set (``examples/traces/sampled_ranks``,
two ranks of a 128-rank NCCL job): rank r is a copy of rank-(r % 2) whose
``distributedInfo`` says rank r of ``--ranks``, and whose timings are perturbed — every
event's start and end stretched by a factor drawn per rank from [0.9, 1.1] around the
trace's start, the whole trace shifted by up to a second, and rounded to whole µs as the
source traces are — so no two ranks are the same trace. The seed is fixed: every run of
the script reads the same set.

Each measurement is one fresh process, timed from start to exit (imports included):

* attnprof: ``attnprof analyze DIR --json OUT`` (terminal view to a file): every rank read
  in worker processes (default: one per core) and summarised (steps, device time,
  attention, kernels by name, HTA's temporal breakdown and overlap), then judged together
  (stragglers, divergence);
* HTA: ``TraceAnalysis(trace_dir=DIR)`` then ``get_temporal_breakdown()`` and
  ``get_comm_comp_overlap()``: the figures attnprof also gives, no more.

They run in pairs, alternating which goes first, ``--repeat`` times. Wall times and each
process's own peak RSS (``wait4``: the largest process of the tree) come from the timed
runs. The memory of the whole tree at once (the parent plus its live workers) is taken
in one more, untimed run of each, sampling ``/proc`` every 20 ms (sampling costs CPU, so
it is kept out of the timed runs). At the end the two tools' per-rank temporal breakdown
and overlap are compared (the largest relative difference), with HTA as it runs by default
and once more with its rounding of nanosecond timestamps to whole microseconds turned off
(``HTA_DISABLE_NS_ROUNDING=1``; it matters for traces with nanoseconds, not these).

The machine must be quiet: figures taken while other work runs say little.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_load_vs_hta import _child_env, _timed  # the same timing as the one-trace bench

SAMPLED = Path(__file__).resolve().parents[1] / "examples/traces/sampled_ranks"
GOAL_SECONDS = 15.0
GOAL_PEAK_MIB = 1024.0
GOAL_SPEEDUP = 8.0

_HTA_SCRIPT = """
import json, logging, resource, sys, warnings
warnings.simplefilter("ignore")
from hta.trace_analysis import TraceAnalysis
logging.disable(logging.WARNING)
analysis = TraceAnalysis(trace_dir=sys.argv[1])
breakdown = analysis.get_temporal_breakdown(visualize=False)
overlap = analysis.get_comm_comp_overlap(visualize=False)
rows = {int(r["rank"]): [float(r["idle_time(us)"]), float(r["compute_time(us)"]),
                         float(r["non_compute_time(us)"]), float(r["kernel_time(us)"])]
        for r in breakdown.to_dict("records")}
for r in overlap.to_dict("records"):
    rows[int(r["rank"])].append(float(r["comp_comm_overlap_pctg"]))
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"ranks": rows, "children_peak_kib": children}))
"""


def make_set(folder: Path, ranks: int, seed: int = 20) -> None:
    """Write ``ranks`` perturbed copies of the public two-rank set into ``folder``."""
    sources = [json.loads(gzip.decompress((SAMPLED / f"rank-{i}.json.gz").read_bytes()))
               for i in (0, 1)]
    draw = random.Random(seed)
    for rank in range(ranks):
        trace = json.loads(json.dumps(sources[rank % 2]))  # a deep copy
        trace["distributedInfo"].update(rank=rank, world_size=ranks)
        stretch, shift = draw.uniform(0.9, 1.1), draw.uniform(0.0, 1e6)
        timed = [e for e in trace["traceEvents"] if isinstance(e.get("ts"), (int, float))]
        origin = min(e["ts"] for e in timed)
        for event in timed:
            # Whole µs, as the source traces have them; start and end are rounded (not
            # start and duration), so what nested still nests.
            start = event["ts"]
            event["ts"] = round(origin + (start - origin) * stretch + shift)
            if isinstance(event.get("dur"), (int, float)):
                end = round(origin + (start + event["dur"] - origin) * stretch + shift)
                event["dur"] = end - event["ts"]
        with gzip.open(folder / f"rank-{rank}.json.gz", "wt", compresslevel=6) as fh:
            json.dump(trace, fh)


def _attnprof(folder: Path, work: Path) -> dict[str, Any]:
    cli = Path(sys.executable).with_name("attnprof")
    argv = [str(cli)] if cli.exists() else [sys.executable, "-m", "attnprof"]
    out = work / "ranks.json"
    seconds, peak, _ = _timed([*argv, "analyze", str(folder), "--json", str(out)], work)
    record = json.loads(out.read_text())
    return {"s": seconds, "peak_mib": peak / 1024, "record": record}


def _hta(folder: Path, work: Path) -> dict[str, Any]:
    seconds, peak, stdout = _timed([sys.executable, "-c", _HTA_SCRIPT, str(folder)], work)
    said = json.loads(stdout.strip().splitlines()[-1])
    return {"s": seconds, "peak_mib": max(peak, said["children_peak_kib"]) / 1024,
            "ranks": {int(k): v for k, v in said["ranks"].items()}}


def tree_peak_mib(argv: list[str], cwd: Path) -> float:
    """Run ``argv`` once, sampling the summed RSS of it and its descendants every 20 ms;
    the largest sum seen, MiB."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=cwd, env=_child_env())
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss_kib(proc.pid))
        time.sleep(0.02)
    return peak / 1024


def _tree_rss_kib(root: int) -> int:
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
            with open(f"/proc/{entry}/statm") as fh:
                pages = int(fh.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents[int(entry)] = int(fields[1])
        rss[int(entry)] = pages * (os.sysconf("SC_PAGE_SIZE") // 1024)
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        grew = bool(more)
        tree |= more
    return sum(rss.get(pid, 0) for pid in tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3, help="pairs of runs (default 3)")
    parser.add_argument("--keep", type=Path, help="make the set here and keep it")
    args = parser.parse_args()
    if not SAMPLED.is_dir():
        raise SystemExit(f"the public rank set is not at {SAMPLED}")
    work = Path(tempfile.mkdtemp(prefix="attnprof-ranks-"))
    folder = args.keep or work / "set"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        make_set(folder, args.ranks)
        size = sum(p.stat().st_size for p in folder.iterdir()) / 2**20
        print(f"{args.ranks} ranks, {size:.1f} MiB gzip'd, made in "
              f"{time.perf_counter() - t0:.1f} s in {folder}", flush=True)
        runs: dict[str, list[dict[str, Any]]] = {"attnprof": [], "hta": []}
        load = [os.getloadavg()[0]]
        _attnprof(folder, work)  # once each, untimed: bytecode and file caches warm
        _hta(folder, work)
        for i in range(args.repeat):
            order = ("attnprof", "hta") if i % 2 == 0 else ("hta", "attnprof")
            for side in order:
                runs[side].append(_attnprof(folder, work) if side == "attnprof"
                                  else _hta(folder, work))
            a, h = runs["attnprof"][-1], runs["hta"][-1]
            print(f"pair {i + 1}: attnprof {a['s']:.2f} s ({a['peak_mib']:.0f} MiB), HTA "
                  f"{h['s']:.2f} s ({h['peak_mib']:.0f} MiB), {h['s'] / a['s']:.1f}x",
                  flush=True)
            load.append(os.getloadavg()[0])
        # HTA rounds ns timestamps to whole µs (start up, end down); run it once more with
        # that off, to tell the rounding from any difference of definition.
        os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
        try:
            exact = _hta(folder, work)["ranks"]
        finally:
            del os.environ["HTA_DISABLE_NS_ROUNDING"]
        cli = Path(sys.executable).with_name("attnprof")
        trees = {"attnprof": tree_peak_mib([str(cli), "analyze", str(folder)], work),
                 "hta": tree_peak_mib([sys.executable, "-c", _HTA_SCRIPT, str(folder)],
                                      work)}
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    _report(runs, trees, load, args.ranks, exact)


def _report(runs: dict[str, list[dict[str, Any]]], trees: dict[str, float],
            load: list[float], ranks: int, exact: dict[int, list[float]]) -> None:
    print(f"\ncpus: {os.cpu_count()}, pairs: {len(runs['hta'])}, load average "
          f"{min(load):.2f}-{max(load):.2f}, python {sys.version.split()[0]}")
    print(f"{'whole process':14s} {'median s':>9s} {'min-max s':>15s} {'peak MiB':>9s} "
          f"{'tree MiB':>9s}")
    for side in runs:
        s = [r["s"] for r in runs[side]]
        peak = statistics.median(r["peak_mib"] for r in runs[side])
        print(f"{side:14s} {statistics.median(s):9.2f} {min(s):7.2f}-{max(s):7.2f} "
              f"{peak:9.0f} {trees[side]:9.0f}")
    a = statistics.median(r["s"] for r in runs["attnprof"])
    h = statistics.median(r["s"] for r in runs["hta"])
    pairs = [y["s"] / x["s"] for x, y in zip(runs["attnprof"], runs["hta"], strict=True)]
    print(f"\nspeed-up (HTA median / attnprof median): {h / a:.1f}x; per pair "
          f"{min(pairs):.1f}x-{max(pairs):.1f}x (goal >= {GOAL_SPEEDUP:g}x)")
    print(f"attnprof median {a:.2f} s for {ranks} ranks (goal <= {GOAL_SECONDS:g} s); "
          f"peak RSS of the whole tree {trees['attnprof']:.0f} MiB (goal <= "
          f"{GOAL_PEAK_MIB:g} MiB)")
    record = runs["attnprof"][-1]["record"]
    worst = _agreement(record, runs["hta"][-1]["ranks"])
    print(f"temporal breakdown and overlap vs HTA, largest difference over {ranks} ranks: "
          f"{worst:.4%} (goal <= 1%); vs HTA without its ns rounding "
          f"(HTA_DISABLE_NS_ROUNDING=1): {_agreement(record, exact):.4%}")
    met = (a <= GOAL_SECONDS and h / a >= GOAL_SPEEDUP and trees["attnprof"] <= GOAL_PEAK_MIB
           and worst <= 0.01)
    print("goals met" if met else "goals NOT met")


def _agreement(record: dict[str, Any], hta: dict[int, list[float]]) -> float:
    """The largest relative difference between the two tools' per-rank figures (the
    overlap as a difference of percentage points / 100)."""
    worst = 0.0
    for r in record["ranks"]:
        t = r["temporal"]
        idle, compute, non_compute, span, overlap = hta[r["rank"]]
        for ours, theirs in ((t["idle_us"], idle), (t["compute_us"], compute),
                             (t["non_compute_us"], non_compute), (t["span_us"], span)):
            worst = max(worst, abs(ours - theirs) / max(abs(theirs), 1e-9))
        worst = max(worst, abs(100 * t["overlap"] - overlap) / 100)
    return worst


if __name__ == "__main__":
    main()
