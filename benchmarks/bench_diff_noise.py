"""How often does ``attnprof diff`` cry wolf, and how often does it catch a 10% slowdown?

Runs ``attnprof compare`` as a user does (a fresh process per run, results in a store of
its own) on one workload, ``--pairs`` times each of:

* two runs with nothing changed (A, B): every row ``diff A B`` flags as a significant
  change is a false alarm — the goal is at most 5% of rows;
* one more run (S) in which a user variant does the same work plus a measured 10% extra
  (it spins for a tenth of its own call's duration after it): ``diff A S`` must flag that
  row as a significant slowdown — the goal is at least 80% of pairs.

A, B and S alternate, so the machine's drift reaches all three alike. Alongside the bare
significance, each line says what the CI gate (``--fail-on-regression 5``) would have
done. The sample count is the default one (``--min-time``, 0.4 s per variant on a CPU);
pass a longer ``--min-time`` to see what more samples buy, and ``--processes K`` to measure
each run in K fresh processes (``compare --processes``), which the diff then judges by the
processes' medians instead of one process's samples. The runs' records stay in the folder
printed at the start, to be diffed again.

    python benchmarks/bench_diff_noise.py                    # 20 pairs, ~7 min on 2 cores
    python benchmarks/bench_diff_noise.py --processes 5      # 20 pairs, ~35 min
    python benchmarks/bench_diff_noise.py --pairs 3 --min-time 1.0
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

from attnprof.analysis.diff import diff_records
from attnprof.analysis.diff.gate import regressions
from attnprof.record.diff import DiffRecord, DiffSide
from attnprof.record.family import load_record

#: The user variant: SDPA, and with SLOWER a measured extra of that fraction of the call.
VARIANT = '''
import time
import torch.nn.functional as F

SLOWER = {slower}


def attention(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    start = time.perf_counter()
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal,
                                         scale=scale, enable_gqa=enable_gqa)
    if SLOWER:
        end = time.perf_counter() + SLOWER * (time.perf_counter() - start)
        while time.perf_counter() < end:
            pass
    return out
'''
USER = "attn.py:attention"


def run(folder: Path, name: str, slower: float, args: argparse.Namespace) -> Path:
    (folder / "attn.py").write_text(VARIANT.format(slower=slower))
    out = folder / f"{name}.json"
    command = [sys.executable, "-m", "attnprof", "compare", "--variants",
               f"{args.variants},{USER}", "--json", str(out), "--store",
               str(folder / "runs.db")]
    if args.min_time is not None:
        command += ["--min-time", str(args.min_time)]
    if args.processes > 1:
        command += ["--processes", str(args.processes)]
    command += args.workload.split()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name}: {done.stderr.strip()}")
    return out


def diff(a: Path, b: Path) -> DiffRecord:
    old, new = load_record(a), load_record(b)
    return diff_records(old, new, DiffSide(ref=a.name, kind=old.kind),
                        DiffSide(ref=b.name, kind=new.kind))


def _change(row: object) -> str:
    m = row.metric("latency_ms")  # type: ignore[attr-defined]
    change = m.judged_change if m is not None else None
    return f"{change:+.1%}" if change is not None else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--variants", default="sdpa,naive,naive-inplace,gqa-native",
                        help="built-in variants measured beside the user variant")
    parser.add_argument("--workload", default="",
                        help="workload flags, e.g. '--seq 1024' (default: the CPU default)")
    parser.add_argument("--min-time", type=float, default=None,
                        help="seconds of sampling per variant (default: attnprof's, 0.4)")
    parser.add_argument("--processes", type=int, default=1,
                        help="compare --processes: fresh processes per run (default 1); with "
                             "several a side, diff tests the processes' medians")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="attnprof-bench-diff-"))
    # The ceilings once, cached in the store, so every run spends its time on the variants.
    subprocess.run([sys.executable, "-m", "attnprof", "env", "--store",
                    str(folder / "runs.db"), "--device", "cpu"], check=True,
                   capture_output=True)
    started = time.monotonic()
    rows = flagged = gated = 0
    caught = caught_gate = 0
    changes: list[float] = []
    samples: list[int] = []
    print(f"records in {folder}")
    print(f"{args.pairs} pairs, variants {args.variants} + the user variant, "
          f"{args.processes} process(es) a run; "
          f"load average at start {os.getloadavg()[0]:.1f}")
    for i in range(args.pairs):
        a, b = run(folder, f"a{i}", 0.0, args), run(folder, f"b{i}", 0.0, args)
        s = run(folder, f"s{i}", 0.10, args)
        same = diff(a, b)
        compared = [r for r in same.rows if r.state == "compared"]
        rows += len(compared)
        false = [r for r in compared if (m := r.metric("latency_ms")) and m.significant]
        flagged += len(false)
        gated += len(regressions(same, 5.0))
        slow = diff(a, s)
        row = next(r for r in slow.rows if r.key["variant"] == USER)
        m = row.metric("latency_ms")
        assert m is not None and m.judged_change is not None
        caught += bool(m.significant and m.worse)
        caught_gate += any(r.key["variant"] == USER for r, _ in regressions(slow, 5.0))
        changes.append(m.judged_change)
        samples.append(min(m.n_old or 0, m.n_new or 0))
        named = ", ".join(f"{r.key['variant']} {_change(r)}" for r in false) or "-"
        print(f"pair {i + 1:2}: unchanged {len(false)}/{len(compared)} flagged ({named}); "
              f"10% slower: {m.judged_change:+.1%} p={m.p_adjusted:.3g} ({m.test}: "
              f"n={m.n_old}+{m.n_new}, processes {len(m.old_processes) or 1}+"
              f"{len(m.new_processes) or 1}) "
              f"{'caught' if m.significant and m.worse else 'MISSED'}; load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
    minutes = (time.monotonic() - started) / 60
    print(f"\nfalse alarms: {flagged}/{rows} rows = {flagged / rows:.1%} significant "
          f"(goal <= 5%); the gate at 5% would have failed on {gated} row(s)")
    print(f"detection of +10%: {caught}/{args.pairs} = {caught / args.pairs:.0%} (goal >= "
          f"80%); the gate at 5%: {caught_gate}/{args.pairs}")
    print(f"measured slowdown: median {statistics.median(changes):+.1%}, "
          f"{min(changes):+.1%}..{max(changes):+.1%}; samples of the user row: median "
          f"{statistics.median(samples)}, min {min(samples)}; {minutes:.1f} min")


if __name__ == "__main__":
    main()
