"""Does timing in interleaved rounds make comparisons steadier than one-after-another?

Runs the same comparison several times with ``rounds=1`` (each variant sampled in one
stretch, one after another) and with the default rounds, alternating the two so both see
the same machine, and prints, per pair of variants, the spread of the ratio of their
medians across repetitions. A ratio is what a user reads off the table ("in-place is 0.8x
naive"); the smaller its spread, the more a single run can be trusted.

    python benchmarks/bench_interleaving.py                       # CPU default workload
    python benchmarks/bench_interleaving.py --repeats 8 --variants naive,naive-inplace
"""

from __future__ import annotations

import argparse
import itertools
import statistics

from attnprof.run.compare import compare
from attnprof.workload.settings import Settings, TimingPlan


def medians(variants: list[str], rounds: int, min_time: float) -> dict[str, float]:
    settings = Settings(plan=TimingPlan(min_time_s=min_time, rounds=rounds),
                        measure_memory=False, check_accuracy=False, measure_ceilings=False)
    record = compare(variants=variants, settings=settings)
    return {r.variant: r.latency_ms.median for r in record.results if r.latency_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="naive,naive-inplace,sdpa-math,sdpa")
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=TimingPlan().rounds)
    parser.add_argument("--min-time", type=float, default=0.4)
    args = parser.parse_args()
    variants = args.variants.split(",")
    runs: dict[int, list[dict[str, float]]] = {1: [], args.rounds: []}
    for _ in range(args.repeats):
        for rounds in runs:  # alternate, so drift reaches both modes alike
            runs[rounds].append(medians(variants, rounds, args.min_time))
    print(f"{args.repeats} repetitions each; ratio of medians, min..max and relative spread "
          "(max/min - 1)")
    print(f"{'pair':32} {'one after another':>28} {f'{args.rounds} rounds':>28}")
    spreads: dict[int, list[float]] = {r: [] for r in runs}
    for a, b in itertools.combinations(variants, 2):
        cells = []
        for rounds, results in runs.items():
            ratios = [m[b] / m[a] for m in results if a in m and b in m]
            spread = max(ratios) / min(ratios) - 1
            spreads[rounds].append(spread)
            cells.append(f"{min(ratios):.3f}..{max(ratios):.3f} ({spread:6.1%})")
        print(f"{b + ' / ' + a:32} {cells[0]:>28} {cells[1]:>28}")
    seq, inter = (statistics.median(spreads[r]) for r in runs)
    print(f"median spread: one after another {seq:.1%}, {args.rounds} rounds {inter:.1%}"
          f" -> {seq / inter if inter else float('inf'):.2f}x steadier")


if __name__ == "__main__":
    main()
