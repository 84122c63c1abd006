"""Is ``attnprof.capture``'s labels' cost right? Its estimate against a paired measurement.

A capture of the user's loop cannot time the loop without its labels, so it reports their
cost as a calibration — one label's cost while the profiler records
(:func:`attnprof.measure.label_cost.label_cost_us`) — times the labels a recorded step
opened. This script measures the same thing directly, on a training step (forward,
cross-entropy loss, backward, AdamW) of a tiny transformers model: inside one recording
profiler session, rounds of steps with attnprof's labels on and off take turns, and the
median of the rounds' differences is what the labels cost a recorded step. Thread CPU time
on one torch thread by default (little moved by other processes' load), or wall time.

    python benchmarks/bench_capture_labels.py                    # gpt2 and llama, tiny
    python benchmarks/bench_capture_labels.py --models gpt2 --layers 4 --rounds 31
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
import transformers
from torch.profiler import ProfilerActivity, profile

from attnprof.knowledge.annotations import MODULE_PREFIX, PART_PREFIX
from attnprof.measure.label_cost import label_cost_us
from attnprof.measure.memory import filtered_kineto_stderr
from attnprof.models.instrument import labelled
from attnprof.run.capture import locate_for_capture

CONFIGS = {"gpt2": ("GPT2Config", {"n_embd": 64, "n_head": 4, "n_positions": 128}, "n_layer"),
           "llama": ("LlamaConfig", {"hidden_size": 64, "intermediate_size": 128,
                                     "num_attention_heads": 4, "num_key_value_heads": 2,
                                     "max_position_embeddings": 128}, "num_hidden_layers")}
VOCAB = 128


def training_step(name: str, layers: int, seq: int) -> tuple[torch.nn.Module, Callable[[], None]]:
    cls, sizes, layer_key = CONFIGS[name]
    config = getattr(transformers, cls)(**sizes, **{layer_key: layers}, vocab_size=VOCAB,
                                        bos_token_id=0, eos_token_id=0,
                                        attn_implementation="sdpa")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, VOCAB, (2, seq))

    def step() -> None:
        logits = model(input_ids=ids).logits
        F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), ids[:, 1:].reshape(-1)).backward()
        opt.step()
        opt.zero_grad()

    return model, step


def labels_per_step(step: Callable[[], None], located: object) -> float:
    """Labels one step opens, counted in a profiler session of its own."""
    with filtered_kineto_stderr(), labelled(located), \
            profile(activities=[ProfilerActivity.CPU]) as prof:  # type: ignore[arg-type]
        step()
    return float(sum(1 for e in prof.events()
                     if e.name.startswith((MODULE_PREFIX, PART_PREFIX))))


def bench(name: str, args: argparse.Namespace, clock: Callable[[], float]) -> None:
    model, step = training_step(name, args.layers, args.seq)
    located = locate_for_capture(model, None, "bench")
    for _ in range(3):
        step()
    count = labels_per_step(step, located)
    per_label = label_cost_us()
    estimate = count * per_label
    took: dict[bool, list[float]] = {False: [], True: []}
    with filtered_kineto_stderr(), profile(activities=[ProfilerActivity.CPU],
                                           record_shapes=True, profile_memory=True):
        for _ in range(args.rounds):
            for on in (False, True):
                with labelled(located) if on else contextlib.nullcontext():  # type: ignore[arg-type]
                    step()  # one untimed step: the other way ran since this one did
                    t0 = clock()
                    for _ in range(args.per_sample):
                        step()
                    took[on].append((clock() - t0) / args.per_sample)
    diffs = [(on - off) * 1e6 for on, off in zip(took[True], took[False], strict=True)]
    q = statistics.quantiles(diffs, n=4)
    bare = statistics.median(took[False]) * 1e6
    measured = statistics.median(diffs)
    print(f"{name}, {args.layers} layers, seq {args.seq}, training step (AdamW), profiler "
          f"recording: {bare / 1e3:.2f} ms per step bare ({args.clock} clock)")
    print(f"  estimate (capture's): {count:.0f} labels × {per_label:.2f} µs = {estimate:.1f} µs "
          f"per step ({estimate / bare:.2%})")
    print(f"  measured (paired, {args.rounds} rounds × {args.per_sample} steps): "
          f"{measured:+.1f} µs per step (IQR {q[0]:+.0f} … {q[2]:+.0f}), "
          f"{measured / bare:+.2%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", default="gpt2,llama")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--per-sample", type=int, default=5)
    parser.add_argument("--clock", default="thread", choices=("thread", "wall"))
    args = parser.parse_args()
    if args.clock == "thread":
        torch.set_num_threads(1)
    clock = time.thread_time if args.clock == "thread" else time.perf_counter
    for name in args.models.split(","):
        bench(name, args, clock)


if __name__ == "__main__":
    main()
