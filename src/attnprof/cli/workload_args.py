"""Workload flags shared by every command that runs attention (compare, profile)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from attnprof.cli.flags import given_flags
from attnprof.errors import UsageError
from attnprof.workload.lengths import DISTRIBUTIONS, parse_lengths
from attnprof.workload.masking import MASKS
from attnprof.workload.problem import MODES
from attnprof.workload.settings import (
    CPU_ALLOCATOR_STATES,
    DEFAULT_VARIANT_TIMEOUT_S,
    default_threads,
    parse_threads,
)

if TYPE_CHECKING:
    from attnprof.commands.compare import Sampling


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one flag per :class:`~attnprof.workload.problem.Workload` field (unset: the
    device's default)."""
    g = parser.add_argument_group("workload (defaults depend on the device)")
    g.add_argument("--batch", "-b", type=int, help="batch size")
    g.add_argument("--heads", type=int, help="query heads")
    g.add_argument("--kv-heads", type=int,
                   help="key/value heads: 1 = MQA, a divisor of --heads = GQA (default: "
                        "heads/4 when 4 divides heads, as in Llama 3; else heads)")
    g.add_argument("--seq", "-s", type=int, help="query length (the cache length in decode)")
    g.add_argument("--kv-seq", type=int, help="key/value length (default: --seq)")
    g.add_argument("--head-dim", "-d", type=int, help="head dimension")
    g.add_argument("--dtype", help="float32, bfloat16 (bf16), float16 (fp16) or float64")
    g.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when present)")
    g.add_argument("--causal", action=argparse.BooleanOptionalAction, default=None,
                   help="apply a causal mask (default: on)")
    g.add_argument("--mode", choices=MODES, help="what one measured step runs")
    g.add_argument("--window", type=int,
                   help="sliding-window size (for --mask window and windowed variants)")
    add_mask_arguments(g)


def add_mask_arguments(g: argparse._ActionsContainer) -> None:
    """``--mask`` and what it reads: ``--lengths``, ``--lengths-dist``, ``--mask-density``,
    ``--prefix``, ``--mask-seed`` (see docs/masks.md)."""
    g.add_argument("--mask", metavar="KIND",
                   help="attention mask: " + ", ".join(MASKS) + " (default causal; "
                        "--no-causal = none)")
    g.add_argument("--lengths", metavar="LO..HI|N,N,..|@FILE",
                   help="ragged lengths for --mask padding (one per batch row) or document "
                        "(documents packed in each row): a range drawn from --lengths-dist, "
                        "a list, or a file of integers")
    g.add_argument("--lengths-dist", metavar="DIST",
                   help="distribution a LO..HI range is drawn from: "
                        + ", ".join(DISTRIBUTIONS) + " (default uniform; seeded)")
    g.add_argument("--mask-density", type=float, metavar="P",
                   help="share of key positions each query admits under --mask bool "
                        "(default 0.5)")
    g.add_argument("--prefix", type=int, metavar="N",
                   help="bidirectional prefix tokens of --mask prefix (default seq/4)")
    g.add_argument("--mask-seed", type=int, metavar="N",
                   help="seed of the mask's random parts: lengths, documents, bool, bias "
                        "(default 0)")


def workload_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The workload fields the user set on the command line (``--lengths`` read: a range
    stays text, drawn once the batch is known; a list or ``@FILE`` becomes integers)."""
    names = ("batch", "heads", "kv_heads", "seq", "kv_seq", "head_dim", "dtype", "device",
             "causal", "mode", "window")
    return {**given_flags(args, names), **mask_fields(args)}


def mask_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The mask's fields the user set (``--mask``, ``--lengths`` read, ...)."""
    fields = given_flags(args, ("mask", "lengths", "lengths_dist", "mask_density", "prefix",
                                "mask_seed", "causal"))
    text = fields.get("lengths")
    if isinstance(text, str):
        parsed = parse_lengths(text)
        if text.startswith("@") or ".." not in text:
            fields["lengths"] = parsed
        if "lengths_dist" in fields and isinstance(fields["lengths"], tuple):
            raise UsageError("--lengths-dist draws a LO..HI range; --lengths here gives the "
                             "lengths themselves; drop one of them")
    return fields


def add_timing_arguments(parser: argparse.ArgumentParser) -> None:
    """``--min-time``, ``--rounds``, ``--seed``, ``--threads``, ``--executor``,
    ``--cpu-allocator`` and ``--variant-timeout``: how a measuring command samples."""
    parser.add_argument("--min-time", type=float, default=None, metavar="S",
                        help="seconds of sampling per variant (default 0.4 on CPU, 1.0 on CUDA)")
    parser.add_argument("--rounds", type=int, default=5, metavar="N",
                        help="interleaved rounds the variants' samples are spread over, so "
                             "machine drift hits all alike (default 5; 1 = one after another)")
    parser.add_argument("--processes", type=int, default=1, metavar="N",
                        help="measure the whole comparison in N fresh processes, one after "
                             "another, keeping each one's median (default 1): a process's "
                             "speed is not the machine's, and only several show how far a "
                             "median moves between runs, which attnprof diff then judges "
                             "against (5 or more for a diff)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the inputs")
    add_threads_argument(parser)
    parser.add_argument("--executor", choices=("inline", "process"), default="inline",
                        help="where the variants run: in this process (default), or in a "
                             "worker process, so a variant that crashes or hangs becomes a "
                             "row with that status instead of ending the run")
    parser.add_argument("--cpu-allocator", choices=CPU_ALLOCATOR_STATES, default="reuse",
                        help="the state of the C library's allocator CPU variants are "
                             "measured in: reuse (default: freed memory is reused, as CUDA's "
                             "caching allocator does), fresh (new pages every call: "
                             "first-touch page faults) or system (malloc left as found)")
    parser.add_argument("--variant-timeout", type=float, default=DEFAULT_VARIANT_TIMEOUT_S,
                        metavar="S",
                        help="seconds one variant may spend in one phase (warm-up, a timing "
                             "round, memory, accuracy, trace) before it becomes a timeout row "
                             "that keeps what the phases before measured "
                             f"(default {DEFAULT_VARIANT_TIMEOUT_S:g}; 0 = no limit); inline "
                             "it stops Python-level hangs only, --executor process also "
                             "native ones (the worker is killed)")


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    """``--threads N|all``: the intra-op threads variants are measured on."""
    parser.add_argument("--threads", metavar="N|all", default=None,
                        help="intra-op threads the variants run on (default 1 on CPU, as "
                             "torch.utils.benchmark: a parallel op's time depends on what "
                             "else the cores do; 'all' = one per core, as your program runs "
                             "by default; on CUDA as torch found them)")


def threads_from_args(args: argparse.Namespace, device: str) -> int | None:
    """The threads ``--threads`` asks for, else the device's default."""
    text = args.threads
    return default_threads(device) if text is None else parse_threads(text)


def timing_from_args(args: argparse.Namespace) -> Sampling:
    """The timing flags as given (checked by the command, on the device it runs on)."""
    from attnprof.commands.compare import Sampling

    return Sampling(min_time_s=args.min_time, rounds=args.rounds, processes=args.processes,
                  seed=args.seed, threads=args.threads, cpu_allocator=args.cpu_allocator,
                  variant_timeout_s=args.variant_timeout, executor=args.executor)
