"""Does attnprof's timer agree with the field's reference timers?

Times the same step of each chosen variant with attnprof's own timing loop and with
``torch.utils.benchmark.Timer.blocked_autorange`` (same thread count), interleaved and
repeated, and prints the ratio of medians. On a CUDA device it also times ``sdpa-flash``
and ``sdpa-cudnn`` with ``triton.testing.do_bench`` (median mode, L2 flushed — as attnprof
does). Agreement within ±10% is the expectation.

    python benchmarks/bench_timer_agreement.py                    # CPU default workload
    python benchmarks/bench_timer_agreement.py --variants sdpa-flash,sdpa-cudnn --device cuda
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.utils.benchmark as tub

from attnprof.measure.inputs import grad_mode, make_inputs, make_step
from attnprof.measure.timer import time_step
from attnprof.run.compare import prepare
from attnprof.variants import Variant
from attnprof.workload.problem import Workload
from attnprof.workload.settings import TimingPlan


def attnprof_median_ms(step, device: str, min_time: float) -> float:
    timing = time_step(step, device=device, plan=TimingPlan(min_time_s=min_time))
    return statistics.median(timing.samples_ms)


def torch_benchmark_median_ms(step, min_time: float) -> float:
    timer = tub.Timer(stmt="step()", globals={"step": step},
                      num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_time).median * 1e3


def do_bench_median_ms(step) -> float:
    from triton.testing import do_bench

    return float(do_bench(step, warmup=25, rep=200, return_mode="median"))


def measure(variant: Variant, w: Workload, rounds: int, min_time: float) -> dict[str, float]:
    built = variant.build(w)
    inputs = make_inputs(w)
    step = make_step(built.call, inputs, w.mode)
    cuda = w.device_type == "cuda"
    ours, theirs, triton_ms = [], [], []
    with built.context(), grad_mode(w.mode):
        step()  # compile / first-call effects out of the way for every timer
        for _ in range(rounds):  # interleave, so drift hits both tools alike
            ours.append(attnprof_median_ms(step, w.device, min_time))
            theirs.append(torch_benchmark_median_ms(step, min_time))
            if cuda:
                triton_ms.append(do_bench_median_ms(step))
    out = {"attnprof": statistics.median(ours), "torch.utils.benchmark": statistics.median(theirs)}
    if cuda:
        out["triton do_bench"] = statistics.median(triton_ms)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", default=None,
                   help="comma-separated (default: naive,sdpa,sdpa-math on CPU; "
                        "sdpa-flash,sdpa-cudnn on CUDA)")
    p.add_argument("--device", default=None)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-time", type=float, default=0.5)
    args = p.parse_args()
    w, _ = prepare(None, ["sdpa"], **({"device": args.device} if args.device else {}))
    names = args.variants.split(",") if args.variants else (
        ["sdpa-flash", "sdpa-cudnn"] if w.device_type == "cuda" else ["naive", "sdpa", "sdpa-math"])
    _, variants = prepare(w, names)
    print(f"workload: {w.describe()}  threads={torch.get_num_threads()}  torch {torch.__version__}")
    print(f"{'variant':16s} {'attnprof ms':>12s} {'t.u.benchmark ms':>17s} {'ratio':>7s}"
          + (f" {'do_bench ms':>12s} {'ratio':>7s}" if w.device_type == "cuda" else ""))
    for v in variants:
        try:
            r = measure(v, w, args.rounds, args.min_time)
        except RuntimeError as exc:
            print(f"{v.name:16s} skipped: {' '.join(str(exc).split())[:100]}")
            continue
        line = (f"{v.name:16s} {r['attnprof']:12.4f} {r['torch.utils.benchmark']:17.4f} "
                f"{r['attnprof'] / r['torch.utils.benchmark']:7.3f}")
        if "triton do_bench" in r:
            line += f" {r['triton do_bench']:12.4f} {r['attnprof'] / r['triton do_bench']:7.3f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
