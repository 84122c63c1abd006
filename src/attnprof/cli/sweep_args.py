"""Flags shared by the commands that run a grid of workloads (sweep, recommend): workload
fields that take lists or ranges, where the points run, and how carefully to measure.

Not a command: it only turns flags into a :class:`~attnprof.run.sweep.SweepPlan` and an
executor. Every flag that shapes the plan defaults to ``None`` so that ``--resume`` can
tell a flag given (which must agree with the record) from one left out (taken from it).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import msgspec

from attnprof.cli.flags import given_flags
from attnprof.cli.parser import csv_list
from attnprof.cli.workload_args import (
    add_mask_arguments,
    add_threads_argument,
    mask_fields,
    threads_from_args,
)
from attnprof.errors import UsageError
from attnprof.workload.grid import INTEGER_FIELDS, Axis, Grid, flag_of, parse_axis, parse_choices
from attnprof.workload.quantities import parse_bytes, parse_seconds
from attnprof.workload.settings import Settings, check_seconds, default_min_time

if TYPE_CHECKING:
    from attnprof.record.sweep import SweepRecord, WorkerLimits
    from attnprof.run.executors import Executor
    from attnprof.run.sweep import SweepPlan

#: Variants a sweep compares when none are named: the textbook path, the careful reference
#: and the fused kernel, whose memory grows as S², S² and S.
DEFAULT_VARIANTS = ("naive", "sdpa-math", "sdpa-flash")
#: Axes run outermost first: modes and dtypes, then the sizes.
_AXIS_ORDER = ("mode", "dtype", *INTEGER_FIELDS)
_HELP = {"batch": "batch size", "heads": "query heads", "kv_heads": "key/value heads",
         "seq": "query length (the cache length in decode)", "kv_seq": "key/value length",
         "head_dim": "head dimension", "window": "sliding-window size"}


def add_grid_arguments(parser: argparse.ArgumentParser) -> None:
    """Workload flags that take a value, a list or a range, and ``--variants``."""
    g = parser.add_argument_group(
        "workload: a value, a list (256,512) or a range (256..8192x2 geometric, 1..8+1 "
        "arithmetic) for each field; the sweep is their product (defaults: the device's)")
    for field in INTEGER_FIELDS:
        g.add_argument(flag_of(field), metavar="N|LIST|RANGE", help=_HELP[field])
    g.add_argument("--dtype", metavar="NAME[,NAME]",
                   help="float32, bfloat16 (bf16), float16 (fp16), float64; a list sweeps them")
    g.add_argument("--mode", metavar="MODE[,MODE]",
                   help="forward, forward+backward or decode; a list sweeps them")
    g.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when present)")
    g.add_argument("--causal", action=argparse.BooleanOptionalAction, default=None,
                   help="apply a causal mask (default: on)")
    add_mask_arguments(g)  # one value each: the mask is the same at every point
    parser.add_argument("--variants", "-v", type=csv_list, action="extend",
                        help="comma-separated variant names or path/to/file.py:callable "
                             f"(default: {','.join(DEFAULT_VARIANTS)})")


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """How carefully to measure, and where each point runs."""
    parser.add_argument("--min-time", type=float, default=None, metavar="S",
                        help="seconds of sampling per variant and point (default 0.4 on CPU, "
                             "1.0 on CUDA)")
    parser.add_argument("--rounds", type=int, default=None, metavar="N",
                        help="interleaved timing rounds per point (default 5)")
    parser.add_argument("--seed", type=int, default=None, help="seed for the inputs (default 0)")
    add_threads_argument(parser)
    parser.add_argument("--executor", choices=("process", "inline", "ray"), default=None,
                        help="where each point runs: a fresh worker process (default; a crash, "
                             "OOM or hang is that point's status), this process (no "
                             "isolation), or a Ray task (--ray-address or RAY_ADDRESS, else "
                             "a local Ray instance)")
    parser.add_argument("--ray-address", metavar="ADDRESS",
                        help="Ray cluster to run on (default: RAY_ADDRESS, else a local one)")
    parser.add_argument("--point-timeout", metavar="SECONDS",
                        help="stop a point's worker after this long: a hang becomes "
                             "'timeout' (default 600 s on CPU, 300 s on CUDA)")
    parser.add_argument("--worker-memory", metavar="SIZE",
                        help="memory the variants may allocate in each worker (e.g. 2GiB), "
                             "beyond what attnprof holds when they start (torch, the "
                             "ceilings, inputs, float64 reference); beyond it a variant is "
                             "'oom' (default: no cap)")


def grid_from_args(args: argparse.Namespace) -> tuple[Grid, dict[str, Any]]:
    """The swept fields (two or more values) and the fixed ones (one value) the flags give."""
    axes: dict[str, tuple[int | str, ...]] = {}
    fixed: dict[str, Any] = {}
    given = given_flags(args, (*_AXIS_ORDER, "device", "causal"))
    masking = {k: v for k, v in mask_fields(args).items() if k != "causal"}
    for field in _AXIS_ORDER:
        text = given.get(field)
        if text is None:
            continue
        values: tuple[int | str, ...] = (
            parse_axis(field, text) if field in INTEGER_FIELDS else parse_choices(field, text))
        if len(values) > 1:
            axes[field] = values
        else:
            fixed[field] = values[0]
    for name in ("device", "causal"):
        if name in given:
            fixed[name] = given[name]
    fixed.update(masking)
    return Grid(axes=[Axis(field=f, values=list(v)) for f, v in axes.items()]), fixed


def plan_from_args(args: argparse.Namespace, resume: SweepRecord | None = None
                   ) -> SweepPlan:
    """The sweep the flags ask for; with ``resume``, what the flags leave out comes from
    the record (and what they give must agree with it, checked by the caller)."""
    from attnprof.workload.problem import check_given

    grid, fixed = grid_from_args(args)
    if resume is not None:
        grid = grid if grid.axes else resume.grid
        fixed = {**resume.fields, **fixed}
        fixed.setdefault("device", resume.base.device)
    variants = args.variants or (resume.variants if resume else list(DEFAULT_VARIANTS))
    executor = args.executor or (resume.executor if resume else "process")
    # A mistake in the flags themselves is said before torch is imported (see
    # attnprof.commands.compare): the fixed values, and the limits and timing flags.
    check_given(**fixed)
    guess = fixed.get("device") or "cpu"
    _settings(args, guess, resume.settings if resume else None,
              _limits(args, executor, guess, resume)).validate()

    from attnprof.measure.device import default_device
    from attnprof.run.sweep import plan_sweep

    device = fixed.pop("device", None) or default_device()
    limits = _limits(args, executor, device, resume)
    settings = _settings(args, device, resume.settings if resume else None, limits)
    plan, _ = plan_sweep(grid, variants, settings, device, executor=executor, limits=limits,
                         **fixed)
    return plan


def _limits(args: argparse.Namespace, executor: str, device: str,
            resume: SweepRecord | None) -> WorkerLimits:
    """``--point-timeout`` and ``--worker-memory``; left out, the record's (resumed) or the
    defaults."""
    from attnprof.record.sweep import WorkerLimits

    if executor == "inline":
        if args.point_timeout or args.worker_memory:
            raise UsageError("--point-timeout and --worker-memory need a worker to enforce "
                             "them; use --executor process (the default) or ray")
        return WorkerLimits()
    recorded = resume.limits if resume is not None else None
    if args.point_timeout:
        timeout: float | None = parse_seconds("--point-timeout", args.point_timeout)
    else:
        timeout = recorded.point_timeout_s if recorded else default_point_timeout(device)
    memory: int | None
    if args.worker_memory:
        memory = parse_bytes("--worker-memory", args.worker_memory)
    else:
        memory = recorded.worker_memory_bytes if recorded else None
    return WorkerLimits(point_timeout_s=timeout, worker_memory_bytes=memory)


def _settings(args: argparse.Namespace, device: str, recorded: Settings | None,
              limits: WorkerLimits) -> Settings:
    base = recorded or Settings()
    min_time = args.min_time
    if min_time is None:
        min_time = (recorded.plan.min_time_s if recorded
                    else default_min_time(device))
    check_seconds("--min-time", min_time)
    plan = msgspec.structs.replace(
        base.plan, min_time_s=min_time,
        rounds=args.rounds if args.rounds is not None else base.plan.rounds)
    threads = (threads_from_args(args, device) if recorded is None or args.threads is not None
               else recorded.threads)
    settings = base.replace(plan=plan, seed=args.seed if args.seed is not None else base.seed,
                            threads=threads)
    if recorded is None and limits.worker_memory_bytes is not None \
            and not device.startswith("cuda"):
        # A worker's memory cap counts address space: a reuse heap keeps every block it
        # grew to (fragmented, several times a step's peak), so under a cap CPU variants run
        # with the system allocator, whose large blocks come and go with the tensors.
        settings = settings.replace(cpu_allocator="system")
    return settings


def executor_from_args(args: argparse.Namespace, plan: SweepPlan) -> Executor:
    """The executor the plan names, with its point time limit and worker memory cap."""
    return executor_for(args, plan.executor, plan.limits)


def executor_for(args: argparse.Namespace, name: str, limits: WorkerLimits) -> Executor:
    """The executor called ``name`` with ``limits`` (``--ray-address`` from the flags)."""
    from attnprof.commands.sweep import executor_for

    return executor_for(name, limits, args.ray_address)


def default_point_timeout(device: str) -> float:
    """Seconds a point may take before its worker is stopped: generous on a CPU, where one
    large point of a slow variant legitimately takes minutes; shorter on a GPU."""
    return 300.0 if device.startswith("cuda") else 600.0
