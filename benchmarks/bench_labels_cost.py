"""What attnprof's labels cost a step with the profiler off, and where it goes.

The model run measures the labels' cost end to end (``labels cost``); this script takes it
apart, in paired, alternated rounds of one step per way:

* ``bare`` — no labels;
* ``labels`` — attnprof's labels as installed by a run (each located module's ``forward``
  wrapped on the instance, the attention functions, rotary and cache calls wrapped);
* ``modules only`` / ``functions only`` — each half of that alone;
* ``hooks (replaced)`` — the design the module labels replaced: a forward pre-hook opening
  and a forward hook closing each label, which puts every call of a hooked module on
  ``nn.Module``'s slow path.

Each way's cost is the median over the rounds of its step time minus the round's ``bare``
one, in µs per step and as a fraction of ``bare``; CPU time of the calling thread
(``--clock thread``, with one torch thread: what the labels add to the work, little moved
by other processes' load) or wall time (``--clock wall``: what a user waits for, valid on
a quiet machine only).

    python benchmarks/bench_labels_cost.py                       # llama and gpt2, tiny, decode
    python benchmarks/bench_labels_cost.py --phase prefill --size default --seq 256
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from attnprof.knowledge.annotations import module_label
from attnprof.models.call_sites import apply_patch, undo_patch
from attnprof.models.instrument import _label_forward, _wrap, labelled, planned_patches
from attnprof.models.locate import Located
from attnprof.models.phases import build_step
from attnprof.run.model import prepare_model
from attnprof.workload.model_spec import ModelSpec

TINY = {"layers": 4, "hidden": 64, "heads": 4, "vocab": 64}


@contextlib.contextmanager
def modules_only(located: Located) -> Iterator[None]:
    from attnprof.models import instrument

    installed = instrument._Installed()
    for path, role in located.roles.items():
        _label_forward(located.modules[path], module_label(role, path), installed)
    try:
        yield
    finally:
        for module, _own in installed.forwards:
            del module.forward


@contextlib.contextmanager
def functions_only(located: Located) -> Iterator[None]:
    patches = planned_patches(located)
    for p in patches:
        apply_patch(p, _wrap)
    try:
        yield
    finally:
        for p in reversed(patches):
            undo_patch(p)


@contextlib.contextmanager
def hooks(located: Located) -> Iterator[None]:
    """The replaced design: a pre-hook opens each module's label, a hook closes it."""
    from torch._C._autograd import _profiler_enabled
    from torch.autograd.profiler import record_function

    handles = []
    for path, role in located.roles.items():
        label, open_ranges = module_label(role, path), []

        def enter(_m: Any, _a: Any, label: str = label, ranges: list[Any] = open_ranges
                  ) -> None:
            rf = None
            if _profiler_enabled():
                rf = record_function(label)
                rf.__enter__()
            ranges.append(rf)

        def leave(_m: Any, _a: Any, _o: Any, ranges: list[Any] = open_ranges) -> None:
            if ranges and (rf := ranges.pop()) is not None:
                rf.__exit__(None, None, None)

        module = located.modules[path]
        handles += [module.register_forward_pre_hook(enter),
                    module.register_forward_hook(leave, always_call=True)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def measure(step: Callable[[], object], ways: dict[str, Callable[[], Any]], rounds: int,
            per_sample: int, clock: Callable[[], float]) -> dict[str, list[float]]:
    took: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(rounds):
        for name, ctx in ways.items():
            with ctx():
                step()
                t0 = clock()
                for _ in range(per_sample):
                    step()
                took[name].append((clock() - t0) / per_sample)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", default="llama,gpt2")
    parser.add_argument("--phase", default="decode", choices=("prefill", "decode"))
    parser.add_argument("--size", default="tiny", choices=("tiny", "default"))
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--per-sample", type=int, default=0,
                        help="steps per sample (default: about 50 ms of steps)")
    parser.add_argument("--clock", default="thread", choices=("thread", "wall"))
    args = parser.parse_args()
    if args.clock == "thread":
        torch.set_num_threads(1)
    clock = time.thread_time if args.clock == "thread" else time.perf_counter
    for name in args.models.split(","):
        bench_model(name, args, clock)


def bench_model(name: str, args: argparse.Namespace, clock: Callable[[], float]) -> None:
    sizes = TINY if args.size == "tiny" else {"layers": 4}
    _, loaded, located = prepare_model(ModelSpec(source=name, seq=args.seq, **sizes))
    step = build_step(loaded, args.phase, cache_len=args.seq).call
    for _ in range(3):
        step()
    t0 = time.perf_counter()
    step()
    per_sample = args.per_sample or max(1, int(0.05 / (time.perf_counter() - t0)))
    ways = {"bare": contextlib.nullcontext, "labels": lambda: labelled(located),
            "modules only": lambda: modules_only(located),
            "functions only": lambda: functions_only(located),
            "hooks (replaced)": lambda: hooks(located)}
    took = measure(step, ways, args.rounds, per_sample, clock)
    bare = statistics.median(took["bare"])
    print(f"\n{name} {args.phase}, {args.size} size, seq {args.seq}: bare "
          f"{bare * 1e3:.2f} ms per step ({args.clock} clock), "
          f"{len(located.roles)} labelled modules, {per_sample} steps per sample, "
          f"{args.rounds} rounds")
    for way, values in took.items():
        if way == "bare":
            continue
        diffs = [v - b for v, b in zip(values, took["bare"], strict=True)]
        q = statistics.quantiles(diffs, n=4)
        med = statistics.median(diffs)
        print(f"  {way:17} {med * 1e6:+8.1f} µs/step (IQR {q[0] * 1e6:+.0f} … "
              f"{q[2] * 1e6:+.0f})  {med / bare:+.1%}")

if __name__ == "__main__":
    main()
