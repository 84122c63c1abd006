"""Does ``attnprof model`` tell a tie from a real difference between implementations?

Two model factories (this file is also their source: ``bench_model_ties.py:same``):

* ``same`` — a tiny Llama whose two implementations run the same kernels: ``sdpa`` (on the
  CPU, SDPA picks its flash kernel here) and ``sdpa-flash`` (the same kernel, pinned). It
  must read "tie" in (nearly) every run.
* ``slowed`` — the same model, with the flash-pinned implementation deliberately slowed by
  20% of a step's work: each attention call spins for 0.2 × (a step's CPU time, least of
  30) / (layers) of the thread's CPU time when SDPA's math backend is disabled, which is
  what pinning flash does. It must be ranked
  (``sdpa-flash`` second, beyond the noise) in (nearly) every run.

Why not ``--attn eager,sdpa`` with an eager path that calls SDPA: attnprof checks in the
trace that an implementation ran what it is named after, and refuses such an "eager" row
("eager was asked for but the trace shows sdpa (flash (CPU)) ran"), so no ranking is made
of it. The pair above runs one kernel under two names, which attnprof accepts.

Each run is a fresh ``attnprof model`` process (``--runs`` of each factory); the script
prints the verdict of every run and the counts.

    python benchmarks/bench_model_ties.py              # 10 runs of each
    python benchmarks/bench_model_ties.py --runs 3 --min-time 0.3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
LAYERS = 2
#: Big enough that a step (about 5 ms on one thread) dwarfs what pinning a backend costs
#: each call (``sdpa_kernel``'s 20 µs): at 64 tokens it was 8% of a 0.8 ms step, a real
#: difference, rightly ranked.
SEQ = 256
#: The slowed implementation's extra time, as a share of the step.
SLOWDOWN = 0.20


def _model() -> tuple[Any, Any]:
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=128, intermediate_size=256,
                                      num_hidden_layers=LAYERS, num_attention_heads=4,
                                      num_key_value_heads=4, vocab_size=128)
    config._attn_implementation = "sdpa"
    model = transformers.LlamaForCausalLM(config).eval()
    return model, torch.randint(0, 128, (1, SEQ))


def same() -> tuple[Any, Any]:
    """The tiny Llama as it is: ``sdpa`` and ``sdpa-flash`` run the same kernel."""
    return _model()


def slowed() -> tuple[Any, Any]:
    """The tiny Llama whose SDPA attention spins while flash is pinned (+20% a step)."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    model, ids = _model()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as attnprof measures on a CPU
    with torch.no_grad():
        for _ in range(5):
            model(ids)
        times = []
        for _ in range(30):
            t0 = time.thread_time()
            model(ids)
            times.append(time.thread_time() - t0)
    torch.set_num_threads(threads)
    # CPU time of this thread, not wall time: the spin is 20% more work, which other
    # processes' load stretches as it stretches the step's own.
    spin = SLOWDOWN * min(times) / LAYERS

    def spinning(*args: Any, **kwargs: Any) -> Any:
        if not torch.backends.cuda.math_sdp_enabled():  # flash pinned: the slowed one
            end = time.thread_time() + spin
            while time.thread_time() < end:
                pass
        return sdpa_attention_forward(*args, **kwargs)

    ALL_ATTENTION_FUNCTIONS["sdpa"] = spinning
    return model, ids


def differs_beyond_noise(a: list[float], b: list[float]) -> tuple[float, float, bool]:
    from attnprof.run.model_ranks import differs_beyond_noise as rule

    return rule(a, b) if a and b else (1.0, 0.0, False)


def one_run(factory: str, min_time: float, rounds: int | None) -> dict[str, Any]:
    """One ``attnprof model`` process on ``factory``: each run's median and verdict."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "model.json"
        cmd = [sys.executable, "-m", "attnprof", "model", f"{HERE}:{factory}",
               "--attn", "sdpa,sdpa-flash", "--min-time", str(min_time), "--json", str(out),
               "--no-store"]
        if rounds is not None:
            cmd += ["--rounds", str(rounds)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy(),
                              check=False)
        if done.returncode not in (0, 3) or not out.exists():
            raise SystemExit(f"attnprof model failed ({done.returncode}): {done.stderr[-2000:]}")
        record = json.loads(out.read_text())
    runs = {r["implementation"]: r for r in record["runs"]}
    return {impl: {"median_ms": r["latency_ms"]["median"] if r.get("latency_ms") else None,
                   "spread": (r["latency_ms"]["iqr"] / r["latency_ms"]["median"]
                              if r.get("latency_ms") and r["latency_ms"]["median"] else None),
                   "samples": r["latency_ms"]["count"] if r.get("latency_ms") else 0,
                   "all": r["latency_ms"]["samples"] if r.get("latency_ms") else [],
                   "rounds": r.get("round_medians_ms") or [],
                   "backend": r.get("sdpa_backend"), "versus": r.get("versus")}
            for impl, r in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--factories", default="same,slowed")
    args = parser.parse_args()
    counts = {"same: tie": 0, "slowed: ranked": 0, "same: tie (rounds)": 0,
              "slowed: ranked (rounds)": 0}
    for factory in args.factories.split(","):
        for n in range(args.runs):
            runs = one_run(factory, args.min_time, args.rounds)
            flash = runs["sdpa-flash"]["versus"] or {}
            sdpa = runs["sdpa"]["versus"] or {}
            other = flash if flash.get("verdict") != "fastest" else sdpa
            verdict = other.get("verdict")
            if factory == "same" and verdict == "tie":
                counts["same: tie"] += 1
            if (factory == "slowed" and verdict == "slower"
                    and flash.get("verdict") == "slower"):
                counts["slowed: ranked"] += 1
            # The same rule with each interleaved round's median as the unit (as a diff
            # takes each process's median when it has them), for comparison.
            fast = min(runs, key=lambda i: runs[i]["median_ms"] or 0.0)
            slow = next(i for i in runs if i != fast)
            p_r, margin_r, by_rounds = differs_beyond_noise(runs[fast]["rounds"],
                                                            runs[slow]["rounds"])
            counts["same: tie (rounds)"] += factory == "same" and not by_rounds
            counts["slowed: ranked (rounds)"] += (factory == "slowed" and by_rounds
                                                  and slow == "sdpa-flash")
            medians = ", ".join(
                f"{impl} {r['median_ms']:.3f} ms (IQR {r['spread']:.0%}, {r['samples']} "
                f"samples, {r['backend']})" for impl, r in runs.items()
                if r["median_ms"] is not None)
            print(f"{factory} run {n + 1}: {medians}; fastest {other.get('fastest')}, other "
                  f"{verdict} ratio {other.get('ratio', 0):.3f} p={other.get('p_value', 1):.2g}"
                  f" margin {other.get('margin') or 0:.0%}; by rounds: "
                  f"{'slower' if by_rounds else 'tie'} p={p_r:.2g} margin {margin_r:.0%}; "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"samples as units: same kernels read tie in {counts['same: tie']} of {args.runs} "
          f"runs; the slowed implementation was ranked second in "
          f"{counts['slowed: ranked']} of {args.runs}")
    print(f"rounds as units: tie in {counts['same: tie (rounds)']} of {args.runs}; ranked in "
          f"{counts['slowed: ranked (rounds)']} of {args.runs}")


if __name__ == "__main__":
    main()
