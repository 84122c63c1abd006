"""Is the per-layer attribution right, and are its labels cheap? Checked against an
independent measurement: ablation.

For each model the script

1. profiles it with ``attnprof.profile_model`` (prefill): the attention share and the core
   share read from the labelled trace, and the labels' cost as the run measured it;
2. times the same model, labels off, three ways in interleaved rounds: as it is; with
   every attention *core* replaced by a no-op that returns zeros of the output's shape
   (transformers' attention function for the implementation swapped out; zeros, not
   ``empty``: uninitialised memory can hold denormals that slow the next matmul); and
   with every attention *module* replaced by a no-op returning zeros of its output's
   shape. ``1 - T(no-op) / T(full)`` is then the share the ablated part took, measured
   without any profiler or label;
3. times labels off against labels on (profiler off) in interleaved rounds: the labels'
   cost end to end; and, in the same rounds, the attention function wrapped in
   ``perf_counter`` (a third measure of the core: nothing removed, no profiler);
   rounds in which any sample waited for a CPU (other processes' load, see
   ``attnprof.measure.contention``) are set aside, and the trace's own wait is printed;
4. checks every layer's components (named, plus ``unattributed``) against the layer's
   time, and how much of the layer the named components claim.

    python benchmarks/bench_model_attribution.py                  # gpt2 and llama, seq 512
    python benchmarks/bench_model_attribution.py --models llama --attn eager --rounds 9

Goal: ablation and attribution agree within 10% relative or 2 points of share (whichever
is larger); components sum to each layer within 5%; labels cost at most 5% end to end.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
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
from attnprof.spec.model_spec import ModelSpec
from attnprof.spec.settings import TimingPlan


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


@contextlib.contextmanager
def core_timed(impl: str, modules: list[torch.nn.Module]) -> Iterator[list[float]]:
    """The attention function of ``impl`` wrapped in ``perf_counter``; yields the list each
    call's seconds go to. A third measurement of the core beside the trace and the
    ablation: no profiler, and nothing removed whose absence could change what the
    neighbours cost. Installed where :func:`core_ablated` installs its no-op; ``eager``,
    transformers' fallback rather than an entry of the registry, wraps the modeling
    module's own ``eager_attention_forward``."""
    import sys

    from transformers.modeling_utils import AttentionInterface

    mapping = AttentionInterface._global_mapping
    saved = mapping.get(impl)
    fn = saved or sys.modules[type(modules[0]).__module__].eager_attention_forward
    took: list[float] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        took.append(time.perf_counter() - t0)
        return out

    mapping[impl] = timed
    try:
        yield took
    finally:
        if saved is None:
            del mapping[impl]
        else:
            mapping[impl] = saved


def interleaved(ways: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]],
                step: Callable[[], object], rounds: int) -> tuple[dict[str, float], int]:
    """Each way's time as a fraction of ``full``'s: the median, over the quiet rounds, of
    one sample of each way taken back to back, divided by the round's ``full`` sample;
    and how many rounds were quiet. A way whose context yields a list (:func:`core_timed`)
    instead gives the share of its own sample that the timed part took.

    Paired and interleaved, because this machine is shared: other jobs' load comes and
    goes within seconds, and a ratio of two samples taken a moment apart cancels what a
    ratio of two separately taken medians (or minima) does not. Not all of it, though:
    under contention a step changes shape (:mod:`attnprof.measure.contention`), so a round
    in which any sample waited for a CPU is set aside — unless every round did, when all
    are kept and the count says so.
    """
    ratios: list[dict[str, float]] = []
    quiet: list[bool] = []
    for _ in range(rounds):
        took: dict[str, float] = {}
        part: dict[str, float] = {}
        calm = True
        for name, ctx in ways.items():
            with ctx() as probe:
                step()  # untimed: whatever the previous way left warm or cold
                if isinstance(probe, list):
                    probe.clear()
                w0, t0 = cpu_wait_s(), time.perf_counter()
                step()
                took[name] = time.perf_counter() - t0
                w1 = cpu_wait_s()
                if isinstance(probe, list):
                    part[name] = sum(probe)
            if w0 is not None and w1 is not None:
                calm = calm and not contended((w1 - w0) / took[name])
        ratios.append({n: part[n] / took[n] if n in part else took[n] / took["full"]
                       for n in ways})
        quiet.append(calm)
    kept = [r for r, q in zip(ratios, quiet, strict=True) if q] or ratios
    return ({n: statistics.median(r[n] for r in kept) for n in ways},
            sum(quiet))


def bench(name: str, impl: str, seq: int, layers: int, rounds: int) -> None:
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
    switch_implementation(loaded, impl)  # the run restored the model's own at its end

    def step() -> object:
        with torch.no_grad():
            return model(*loaded.args, **loaded.kwargs)

    modules = [located.modules[f.path] for f in located.attention]
    ratio, quiet = interleaved({"full": contextlib.nullcontext,
                                "core no-op": lambda: core_ablated(impl),
                                "attention no-op": lambda: attention_ablated(modules),
                                "labels on": lambda: labelled(located),
                                "core timed": lambda: core_timed(impl, modules)},
                               step, rounds)
    core_ablation = 1 - ratio["core no-op"]
    attention_ablation = 1 - ratio["attention no-op"]
    overhead = ratio["labels on"] - 1
    wait = "not counted here" if att.cpu_wait is None else f"{att.cpu_wait:.1%}"
    faults = ("not counted here" if att.extra_fault_bytes is None
              else f"{att.extra_fault_bytes / 2**20:.1f} MiB")
    print(f"\n{name} ({impl}), {layers} layers, seq {seq}: step {run.latency_ms.median:.1f} "
          f"ms (the run's median); against full, paired over {quiet} quiet rounds of "
          f"{rounds}{' (none quiet: all kept)' if not quiet else ''}: core no-op "
          f"{ratio['core no-op']:.3f}, attention no-op {ratio['attention no-op']:.3f}, "
          f"labels on {ratio['labels on']:.3f}; traced step {att.total_cpu_us / 1e3:.1f} ms, "
          f"waiting for a CPU {wait} of it, page faults beyond an untraced step's {faults}")
    for what, traced, ablated, timed in (
            ("core share", att.core_share, core_ablation, ratio["core timed"]),
            ("attention share", att.attention_share, attention_ablation, None)):
        assert traced is not None
        diff = abs(traced - ablated)
        ok = diff <= max(0.10 * ablated, 0.02)
        third = "" if timed is None else f"   perf_counter {timed:6.1%}"
        print(f"  {what:16} attribution {traced:6.1%}   ablation {ablated:6.1%}   "
              f"|diff| {diff:5.1%} pts, {diff / ablated if ablated else 0:5.1%} relative"
              f"   {'OK' if ok else 'MISS'}{third}")
    for basis in (att.time_basis, "cpu"):
        worst_sum, worst_named = 0.0, 1.0
        for layer in att.layers:
            total = sum(c.on(basis) for c in layer.components)
            named = total - sum(c.on(basis) for c in layer.components
                                if c.name == "unattributed")
            worst_sum = max(worst_sum, abs(total / layer.total_on(basis) - 1))
            worst_named = min(worst_named, named / layer.total_on(basis))
        print(f"  components vs layer ({basis} time): worst |sum/layer - 1| {worst_sum:.2e};"
              f" named components claim at least {worst_named:.1%} of every layer")
    for note in run.notes:
        print(f"  run's note: {note}")
    print(f"  labels' cost end to end: {overhead:+.1%} here (paired), "
          f"{run.instrumentation_overhead:+.1%} in the run's own rounds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gpt2,llama")
    parser.add_argument("--attn", default="sdpa,eager")
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    for name in args.models.split(","):
        for impl in args.attn.split(","):
            bench(name, impl, args.seq, args.layers, args.rounds)


if __name__ == "__main__":
    main()
