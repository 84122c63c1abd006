"""Padded vs packed attention on ragged batches: what padding costs, and what packing buys.

For each length distribution (``--lengths-dist uniform|normal|longtail`` over ``LO..HI``)
one ``attnprof compare --mask padding`` (non-causal: PyTorch's jagged SDPA takes no
``is_causal``) measures, interleaved on the same inputs:

* ``sdpa``: the padded baseline, SDPA on the padded batch with its padding mask;
* ``sdpa-unpadded``: SDPA on each sequence at its own length (the unpadded total the
  record's padding waste is measured against);
* ``sdpa-jagged``: one SDPA call on a jagged NestedTensor of the real tokens;
* ``flex-document`` (compiled; ``--eager`` for flex-document-eager): the real tokens packed
  into one row with a document block mask.

It prints each distribution's lengths, the padding waste (share of FLOPs, and time), and
each variant's median and its ratio to the padded baseline. Every output is checked
against the float64 reference on the real tokens by compare itself.

    python benchmarks/bench_packing.py                         # B=8 S=512 D=64, ~2-3 min
    python benchmarks/bench_packing.py --batch 4 --seq 256 --lengths 16..256 --eager
"""

from __future__ import annotations

import argparse

from attnprof.run.compare import compare
from attnprof.workload.lengths import DISTRIBUTIONS
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings, TimingPlan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--lengths", default="32..512")
    parser.add_argument("--dists", default=",".join(DISTRIBUTIONS))
    parser.add_argument("--min-time", type=float, default=0.4)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--eager", action="store_true",
                        help="flex-document-eager instead of the compiled flex-document")
    args = parser.parse_args()
    flex = "flex-document-eager" if args.eager else "flex-document"
    variants = ["sdpa", "sdpa-unpadded", "sdpa-jagged", flex]
    settings = Settings(plan=TimingPlan(min_time_s=args.min_time), measure_ceilings=False)
    for dist in args.dists.split(","):
        workload = Workload(batch=args.batch, heads=args.heads, seq=args.seq,
                            head_dim=args.head_dim, causal=False, mask="padding",
                            lengths=args.lengths, lengths_dist=dist, device=args.device,
                            dtype=args.dtype).validate()
        record = compare(workload, variants, settings=settings)
        waste = record.padding_waste
        assert waste is not None
        print(f"== {dist} {args.lengths}: lengths {waste.lengths} "
              f"({waste.real_tokens} of {waste.padded_tokens} tokens real)")
        time = ("—" if waste.time_ms is None
                else f"{waste.time_ms:.3f} ms ({waste.time_share:.0%} of padded)")
        print(f"   padding waste: {waste.flops_share:.0%} of FLOPs; time {time}")
        base = record.result("sdpa").latency_ms
        for row in record.results:
            if row.latency_ms is None:
                print(f"   {row.variant:20s} {row.status}: {row.reason}")
                continue
            ratio = f"{row.latency_ms.median / base.median:5.2f}x" if base else ""
            compile_s = (f"  (compile {row.compile_time_s:.1f} s)"
                         if row.compile_time_s is not None else "")
            print(f"   {row.variant:20s} {row.latency_ms.median:9.3f} ms  {ratio}  "
                  f"IQR {row.latency_ms.iqr / row.latency_ms.median:4.0%}  "
                  f"err {row.max_abs_error:.1e}  backend {row.sdpa_backend or '—'}"
                  f"{compile_s}")


if __name__ == "__main__":
    main()
