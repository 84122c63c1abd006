"""Is the per-layer attribution right, and are its labels cheap? Checked against two
measurements that use no profiler and no label: perf_counter around each attention module,
and ablation.

For each model × implementation × sequence length the script

1. profiles it with ``attnprof.profile_model`` (prefill): the attention and core shares of
   the traced step (shares of its wall time), the traced steps' spread, and the labels'
   cost as the run measured it (with its spread over the run's rounds);
2. times the same model, labels off, in paired, interleaved rounds, one sample of each way
   per round: as it is (``full``); with attnprof's labels on (profiler off: their cost);
   with every attention module's and the attention function's forward timed by
   ``perf_counter`` (forward hooks and a wrapper, nothing removed: the *perf_counter*
   reference, attention's and the core's time over the step's, within that one sample);
   with every attention *core* replaced by a no-op returning zeros of its output's shape,
   and with every attention *module* replaced by one (the *ablation* reference,
   ``1 − T(no-op) / T(full)``). Rounds in which any sample's threads waited for a CPU more
   than 5% of its time (other processes' load) are set aside unless every round did;
3. states the goal — the attribution within 2 points of the reference — against the
   *least noisy* reference: the one whose values over the quiet rounds have the smaller
   interquartile range, printed beside it;
4. checks every layer's components against the layer, and how much the named ones claim.

With ``--runs N`` it does all of that N times and ends with a summary table (and
``--json PATH`` keeps every figure).

    python benchmarks/bench_model_attribution.py                  # gpt2 and llama, seq 512
    python benchmarks/bench_model_attribution.py --models llama,gpt2 --attn sdpa,eager \\
        --seq 256,512 --runs 3 --json attribution.json            # the acceptance runs

Goals: attention share within 2 points of the least noisy reference in every row of every
run; components sum to each layer; labels cost at most 5% end to end in every row.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from attnprof.knowledge.capture_noise import contended
from attnprof.measure.contention import cpu_wait_s
from attnprof.models.implementations import switch_implementation
from attnprof.models.instrument import labelled
from attnprof.record.model import ModelSettings
from attnprof.run.model import prepare_model, profile_model
from attnprof.workload.model_spec import ModelSpec
from attnprof.workload.settings import TimingPlan

GOAL_POINTS = 0.02
LABELS_GOAL = 0.05


@contextlib.contextmanager
def core_ablated(impl: str) -> Iterator[None]:
    """The attention function of ``impl`` replaced by a no-op returning its output shape."""
    from transformers.modeling_utils import AttentionInterface

    mapping = AttentionInterface._global_mapping

    def noop(module: Any, query: torch.Tensor, key: Any, value: Any, mask: Any,
             **kwargs: Any) -> tuple[torch.Tensor, None]:
        b, h, s, d = query.shape
        return query.new_zeros(b, s, h, d), None

    saved = mapping.get(impl)
    mapping[impl] = noop
    try:
        yield
    finally:
        if saved is None:
            del mapping[impl]
        else:
            mapping[impl] = saved


@contextlib.contextmanager
def attention_ablated(modules: list[torch.nn.Module]) -> Iterator[None]:
    """Every attention module's forward replaced by zeros of its output's shape."""
    def noop(hidden_states: torch.Tensor, *args: Any, **kwargs: Any) -> tuple[Any, None]:
        return torch.zeros_like(hidden_states), None

    for m in modules:
        m.forward = noop  # type: ignore[method-assign]
    try:
        yield
    finally:
        for m in modules:
            del m.forward


class Timed:
    """perf_counter seconds inside the attention modules and inside the attention function
    over one step: forward hooks on each module, a wrapper around the function."""

    def __init__(self) -> None:
        self.attention = 0.0
        self.core = 0.0

    def clear(self) -> None:
        self.attention = self.core = 0.0


@contextlib.contextmanager
def perf_counter_timed(impl: str, modules: list[torch.nn.Module]) -> Iterator[Timed]:
    """The attention modules and ``impl``'s attention function timed (see :class:`Timed`).
    The function is installed where :func:`core_ablated` installs its no-op; ``eager``,
    transformers' fallback rather than an entry of the registry, wraps the modeling
    module's own ``eager_attention_forward``."""
    import sys as _sys

    from transformers.modeling_utils import AttentionInterface

    timed = Timed()
    mapping = AttentionInterface._global_mapping
    saved = mapping.get(impl)
    home = _sys.modules[type(modules[0]).__module__]
    fn = saved or home.eager_attention_forward

    def core(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        timed.core += time.perf_counter() - t0
        return out

    started: list[float] = []

    def enter(_m: Any, _args: Any) -> None:
        started.append(time.perf_counter())

    def leave(_m: Any, _args: Any, _out: Any) -> None:
        timed.attention += time.perf_counter() - started.pop()

    handles = [h for m in modules for h in (m.register_forward_pre_hook(enter),
                                            m.register_forward_hook(leave))]
    if saved is None:
        home.eager_attention_forward = core
    else:
        mapping[impl] = core
    try:
        yield timed
    finally:
        for h in handles:
            h.remove()
        if saved is None:
            home.eager_attention_forward = fn
        else:
            mapping[impl] = saved


Way = Callable[[], contextlib.AbstractContextManager[Any]]


def interleaved(ways: dict[str, Way], step: Callable[[], object],
                rounds: int) -> tuple[dict[str, list[float]], int]:
    """Per way, its value in each kept round, and how many rounds were quiet.

    A way's value is its sample over the same round's ``full`` sample, or — for a way whose
    context yields a :class:`Timed` — the attention and core seconds over its own sample
    (``<name>`` and ``<name> core``). Paired and interleaved, because this machine is
    shared: load comes and goes within seconds, and a ratio of two samples taken a moment
    apart cancels what two separately taken medians do not. A round in which any sample
    waited for a CPU is set aside (a contended step has another shape), unless every
    round did.
    """
    values: list[dict[str, float]] = []
    quiet: list[bool] = []
    for _ in range(rounds):
        took: dict[str, float] = {}
        row: dict[str, float] = {}
        calm = True
        for name, ctx in ways.items():
            with ctx() as probe:
                step()  # untimed: whatever the previous way left warm or cold
                if isinstance(probe, Timed):
                    probe.clear()
                w0, t0 = cpu_wait_s(), time.perf_counter()
                step()
                took[name] = time.perf_counter() - t0
                w1 = cpu_wait_s()
                if isinstance(probe, Timed):
                    row[name] = probe.attention / took[name]
                    row[f"{name} core"] = probe.core / took[name]
            if w0 is not None and w1 is not None:
                calm = calm and not contended((w1 - w0) / took[name])
        for name in ways:
            row.setdefault(name, took[name] / took["full"])
        values.append(row)
        quiet.append(calm)
    kept = [r for r, q in zip(values, quiet, strict=True) if q] or values
    return {n: [r[n] for r in kept] for n in kept[0]}, sum(quiet)


def spread(values: list[float]) -> tuple[float, float, float]:
    """Median, and the interquartile range's ends."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return statistics.median(values), q[0], q[2]


def bench(name: str, impl: str, seq: int, layers: int, rounds: int) -> dict[str, Any]:
    spec = ModelSpec(source=name, layers=layers, seq=seq, implementations=(impl,))
    prepared = prepare_model(spec)
    spec, loaded, located = prepared
    plan = TimingPlan(warmup_s=0.0, min_time_s=1.0, min_samples=6, max_samples=50,
                      min_warmup_calls=1, rounds=3)
    record = profile_model(prepared=prepared, settings=ModelSettings(plan=plan,
                                                                     trace_steps=3))
    run = record.runs[0]
    att = run.attribution
    assert att is not None and run.latency_ms is not None
    model = loaded.model
    switch_implementation(loaded, impl, located)  # the run restored the model's own at its end

    def step() -> object:
        with torch.no_grad():
            return model(*loaded.args, **loaded.kwargs)

    modules = [located.modules[f.path] for f in located.attention]
    per, quiet = interleaved({"full": contextlib.nullcontext,
                              "labels on": lambda: labelled(located),
                              "perf_counter": lambda: perf_counter_timed(impl, modules),
                              "core no-op": lambda: core_ablated(impl),
                              "attention no-op": lambda: attention_ablated(modules)},
                             step, rounds)
    references = {
        "attention": {"perf_counter": per["perf_counter"],
                      "ablation": [1 - r for r in per["attention no-op"]]},
        "core": {"perf_counter": per["perf_counter core"],
                 "ablation": [1 - r for r in per["core no-op"]]},
    }
    labels = spread([r - 1 for r in per["labels on"]])
    row: dict[str, Any] = {
        "model": name, "implementation": impl, "seq": seq, "layers": layers,
        "step_ms": run.latency_ms.median, "quiet_rounds": quiet, "rounds": rounds,
        "trace_cpu_wait": att.cpu_wait, "trace_extra_fault_bytes": att.extra_fault_bytes,
        "step_attention_shares": att.step_attention_shares, "unreliable": att.unreliable,
        "labels_cost": labels, "labels_cost_run": run.instrumentation_overhead,
        "labels_cost_run_range": run.instrumentation_overhead_range, "notes": run.notes}
    print(f"\n{name} ({impl}), {layers} layers, seq {seq}: step {run.latency_ms.median:.1f} "
          f"ms (the run's median); {quiet} quiet rounds of {rounds}"
          f"{' (none quiet: all kept)' if not quiet else ''}; traced steps' attention "
          f"shares {', '.join(f'{s:.1%}' for s in att.step_attention_shares)}, waiting for "
          f"a CPU {_pct(att.cpu_wait)}" + (f"; UNRELIABLE: {att.unreliable}"
                                           if att.unreliable else ""))
    for what, traced in (("attention", att.attention_share), ("core", att.core_share)):
        assert traced is not None
        refs = {k: spread(v) for k, v in references[what].items()}
        best = min(refs, key=lambda k: refs[k][2] - refs[k][1])
        diff = abs(traced - refs[best][0])
        ok = diff <= GOAL_POINTS
        row[what] = {"attribution": traced, **{k: list(v) for k, v in refs.items()},
                     "reference": best, "diff": diff, "ok": ok}
        cells = "   ".join(f"{k} {m:6.1%} (IQR {lo:.1%} … {hi:.1%})"
                           for k, (m, lo, hi) in refs.items())
        print(f"  {what + ' share':16} attribution {traced:6.1%}   {cells}   vs {best} "
              f"(least noisy): |diff| {diff:.1%} pts  {'OK' if ok else 'MISS'}")
    worst_sum, worst_named = 0.0, 1.0
    for layer in att.layers:
        total = sum(c.cpu_us for c in layer.components)
        named = total - sum(c.cpu_us for c in layer.components if c.name == "unattributed")
        worst_sum = max(worst_sum, abs(total / layer.cpu_us - 1))
        worst_named = min(worst_named, named / layer.cpu_us)
    row.update(worst_sum=worst_sum, worst_named=worst_named)
    print(f"  components vs layer (wall time): worst |sum/layer - 1| {worst_sum:.2e}; named "
          f"components claim at least {worst_named:.1%} of every layer")
    for note in run.notes:
        print(f"  run's note: {note}")
    m, lo, hi = labels
    low, high = run.instrumentation_overhead_range or (float("nan"), float("nan"))
    print(f"  labels' cost end to end: {m:+.1%} (IQR {lo:+.1%} … {hi:+.1%}) here, paired; "
          f"{run.instrumentation_overhead:+.1%} ({low:+.1%} … {high:+.1%}) in the run's own "
          f"rounds  {'OK' if m <= LABELS_GOAL else 'MISS'}")
    return row


def _pct(value: float | None) -> str:
    return "not counted here" if value is None else f"{value:.1%}"


def summary(rows: list[dict[str, Any]]) -> None:
    """One line per row of every run: the attention share against its least noisy
    reference, and the labels' cost."""
    print("\nsummary: attention share, attribution / least noisy reference (IQR), |diff|; "
          "labels' cost (paired, IQR)")
    for r in rows:
        a = r["attention"]
        ref = a[a["reference"]]
        m, lo, hi = r["labels_cost"]
        print(f"  run {r['run']}  {r['model']:5} {r['implementation']:6} seq {r['seq']:4}: "
              f"{a['attribution']:5.1%} / {a['reference']} {ref[0]:5.1%} "
              f"({ref[1]:.1%} … {ref[2]:.1%}), {a['diff']:.1%} pts {'OK' if a['ok'] else 'MISS'};"
              f" labels {m:+.1%} ({lo:+.1%} … {hi:+.1%})"
              f" {'OK' if m <= LABELS_GOAL else 'MISS'}"
              + ("; UNRELIABLE capture" if r["unreliable"] else ""))
    misses = sum(not r["attention"]["ok"] for r in rows)
    costly = sum(r["labels_cost"][0] > LABELS_GOAL for r in rows)
    print(f"  {len(rows)} rows: {misses} attention-share misses, {costly} rows with labels "
          f"over {LABELS_GOAL:.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", default="gpt2,llama")
    parser.add_argument("--attn", default="sdpa,eager")
    parser.add_argument("--seq", default="512", help="comma-separated sequence lengths")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=1, help="repeat everything N times")
    parser.add_argument("--json", metavar="PATH", help="write every row's figures to PATH")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for run in range(1, args.runs + 1):
        for name in args.models.split(","):
            for impl in args.attn.split(","):
                for seq in (int(s) for s in args.seq.split(",")):
                    print(f"\n[run {run} of {args.runs}]", end="")
                    rows.append({"run": run, **bench(name, impl, seq, args.layers,
                                                     args.rounds)})
                    sys.stdout.flush()
    summary(rows)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
