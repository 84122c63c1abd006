"""``attnprof model SPEC``: how much of a model is attention, per layer and component, in
each phase and under each attention implementation.

SPEC is a built-in (gpt2, llama, bert, vit: transformers from a config, random weights,
sized by the flags), ``--model-path DIR`` (a local folder with a transformers
``config.json``; its weights when present), or ``path/to/file.py:factory`` /
``package.module:factory`` returning ``(model, inputs)``. The model is built and its
attention located before anything is measured or written, so a mistake is one line and
exit status 2 with no output file.

Exit status: 0 when every run's figures stand; 3 when a run's shares are unreliable (every
capture of it was contended or faulting, or its traced steps disagreed: the table marks
them ``?`` and the record says why in ``shares_unreliable``); 2 for a user mistake.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from attnprof.cli.model_grid import combinations, int_list, refuse_outputs
from attnprof.cli.outcome import Finished, print_written, rows_status
from attnprof.cli.parser import csv_list
from attnprof.cli.pricing import add_price_arguments
from attnprof.cli.reports import add_report_arguments, write_reports
from attnprof.cli.workload_args import add_threads_argument
from attnprof.errors import UsageError
from attnprof.exit_codes import ExitCode
from attnprof.workload.settings import CPU_ALLOCATOR_STATES

if TYPE_CHECKING:

    pass

NAME = "model"
SAVES_RECORDS = True
#: The exit status of a finished run whose shares are marked unreliable.
UNRELIABLE_SHARES = ExitCode.UNMEASURED


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="profile a whole model: attention's share per layer and "
                                  "component, per phase and implementation",
                       epilog="exit status: 0 done; 3 done, but a run's shares are "
                              "unreliable (noisy captures: marked ? in the table); 2 a "
                              "mistake in the command",
                       description="Profile a model: per-layer time and memory split into "
                                   "attention components (Q/K/V projections, position "
                                   "encoding, core, output projection, KV cache) and the "
                                   "rest, for each phase and attention implementation.")
    p.add_argument("spec", nargs="?", metavar="SPEC",
                   help="gpt2, llama, bert, vit, path/to/file.py:factory or "
                        "package.module:factory (returning (model, inputs))")
    p.add_argument("--model-path", metavar="DIR",
                   help="a local folder with a transformers config.json (weights used when "
                        "present, random otherwise; never downloaded)")
    g = p.add_argument_group("size (built-ins; --seq and --batch also for --model-path)")
    for flag, what in (("--hidden", "hidden size"), ("--heads", "query heads"),
                       ("--vocab", "vocabulary size")):
        g.add_argument(flag, type=int, help=what)
    # These take lists: every combination runs, implementations ranked within each.
    for flag, what in (("--layers", "layers"),
                       ("--kv-heads", "key/value heads (llama: 1 = MQA, a divisor = GQA)"),
                       ("--seq", "prompt length in tokens (vit: patches)"),
                       ("--batch", "batch size (default 1)")):
        g.add_argument(flag, type=int_list(flag), metavar="N[,N...]",
                       help=f"{what}; a list runs each value (with the other lists: every "
                            "combination, in one table)")
    g.add_argument("--dtype", default="float32", help="float32, bfloat16, float16, float64")
    g.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when present)")
    p.add_argument("--attention-module", metavar="REGEX",
                   help="also take modules whose path or class matches REGEX as attention "
                        "(hand-written attention that calls no SDPA)")
    p.add_argument("--attn", type=csv_list, action="extend", metavar="LIST",
                   help="attention implementations to compare on the same weights: eager, "
                        "sdpa, flex_attention, sdpa-math, sdpa-flash, sdpa-efficient, "
                        "sdpa-cudnn (default: the model's own)")
    p.add_argument("--phase", type=csv_list, action="extend", metavar="LIST",
                   help="prefill, decode, train (comma-separated; default prefill)")
    p.add_argument("--cache-len", type=int, metavar="N",
                   help="decode: tokens already in the KV cache (default --seq)")
    p.add_argument("--new-tokens", type=int, default=8, metavar="N",
                   help="decode: tokens generated to measure the cache's growth (default 8)")
    p.add_argument("--json", metavar="PATH", help="write the record (JSON) to PATH")
    p.add_argument("--csv", metavar="PATH", help="write one CSV line per layer and run")
    p.add_argument("--trace", metavar="DIR", help="keep each run's trace in DIR")
    p.add_argument("--trace-steps", type=int, default=3, metavar="N",
                   help="steps per trace; the figures are those of the step whose "
                        "attention share is the median (default 3)")
    p.add_argument("--min-time", type=float, default=0.5, metavar="S",
                   help="seconds of sampling per run, split between labels off and on "
                        "(default 0.5)")
    p.add_argument("--rounds", type=int, default=4, metavar="N",
                   help="interleaved rounds of labels-off/labels-on samples (default 4)")
    p.add_argument("--seed", type=int, default=0, help="seed for weights and inputs")
    p.add_argument("--cpu-allocator", choices=CPU_ALLOCATOR_STATES, default="reuse",
                   help="the C allocator's state on CPU: reuse (default: freed memory is "
                        "reused), fresh (new pages every call) or system (left as found)")
    add_threads_argument(p)
    p.add_argument("--executor", choices=("inline", "process"), default="inline",
                   help="where the implementations run: in this process (default), or in "
                        "a worker process, so one that segfaults, hangs or runs out of "
                        "memory becomes rows with that status and the others keep theirs")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="with --executor process: a worker that reports no progress for "
                        "SECONDS (one implementation's phase: build, warm-up, rounds, "
                        "trace; its start-up and the model's build get 120 s more) is "
                        "killed, and that implementation's unfinished phases are "
                        "'timeout' rows (default 900)")
    p.add_argument("--top", type=int, default=12, metavar="N",
                   help="layers shown per table, ×4 (default 12: 48 layers)")
    add_report_arguments(p)
    add_price_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> Finished:
    from attnprof.cli.planning import Figures, plan_outputs
    from attnprof.cli.pricing import price_request, say_unpriced
    from attnprof.commands import model
    from attnprof.outputs import Output
    from attnprof.render import CsvRenderer, TerminalRenderer, write_rendered
    from attnprof.render.progress import ModelRunProgress
    from attnprof.render.terminal import make_console
    from attnprof.workload.model_spec import ModelSpec

    if args.top <= 0:
        raise UsageError(f"--top must be a positive integer, got {args.top}")
    price = price_request(args)  # a bad price fails before torch is loaded
    outputs = [Output(flag, path) for flag, path in (("--json", args.json),
                                                     ("--csv", args.csv)) if path is not None]
    if args.trace is not None:
        outputs.append(Output("--trace", args.trace, folder=True, files=_trace_files(args)))
    combos = combinations(args)
    plan: list[Output] = []
    if len(combos) > 1:
        refuse_outputs(args)
    else:
        plan = plan_outputs(args, outputs, _input_files(args), figures=Figures("model"))
    one = combos[0]
    spec = ModelSpec(source=args.spec, model_path=args.model_path, layers=one["layers"],
                     hidden=args.hidden, heads=args.heads, kv_heads=one["kv_heads"],
                     vocab=args.vocab, seq=one["seq"],
                     batch=one["batch"] or 1,
                     dtype=args.dtype, device=args.device or _default_device(),
                     attention_module=args.attention_module,
                     implementations=tuple(args.attn or ()),
                     phases=tuple(args.phase or ("prefill",)), cache_len=args.cache_len,
                     new_tokens=args.new_tokens)
    request = model.ModelRequest(
        spec=spec, min_time=args.min_time, rounds=args.rounds, seed=args.seed,
        trace_steps=args.trace_steps, trace_dir=args.trace, cpu_allocator=args.cpu_allocator,
        threads=args.threads, executor=args.executor, timeout=args.timeout, json=args.json,
        outputs=tuple(plan), price=price)
    console = make_console()
    if len(combos) > 1:  # every combination through the executor, in one table
        from attnprof.render.model_grid_view import render_model_grid

        records = model.run_grid(request, combos, ModelRunProgress)
        render_model_grid(records, console)
        return Finished(rows_status(r.status for record in records for r in record.runs))
    record = model.run(request, ModelRunProgress)
    say_unpriced(console, request.price, record, record.environment.device_name,
                 record.model.device.partition(":")[0])
    if args.csv:
        write_rendered(CsvRenderer(), record, args.csv)
    sys.stdout.write(TerminalRenderer.for_stdout(top=args.top).render(record))
    print_written(console, [("record", args.json), ("CSV", args.csv)])
    write_reports(args, record, console)
    status = (UNRELIABLE_SHARES if any(r.shares_unreliable for r in record.runs)
              else rows_status(r.status for r in record.runs))
    return Finished(status, record)


def _default_device() -> str:
    from attnprof.measure.device import default_device

    return default_device()


def _trace_files(args: argparse.Namespace) -> tuple[str, ...]:
    """Every trace ``--trace DIR`` may hold (one per implementation and phase, as
    :mod:`attnprof.run.model` names them): the model's own implementation is known only
    once it is built, so every known one is listed."""
    from attnprof.measure.capture import trace_file_name
    from attnprof.models.implementations import MODEL_DEFAULT
    from attnprof.workload.model_spec import IMPLEMENTATIONS, PHASES

    impls = dict.fromkeys([*(a.strip() for a in args.attn or ()), *IMPLEMENTATIONS,
                           MODEL_DEFAULT])
    phases = dict.fromkeys([*(p.strip() for p in args.phase or ()), *PHASES])
    return tuple(trace_file_name(f"model-{impl}-{phase}") for impl in impls for phase in phases)


def _input_files(args: argparse.Namespace) -> list[str]:
    """What the command reads, which no output may replace: a factory's file, and a model
    folder's config and weights."""
    from pathlib import Path

    files = []
    target = (args.spec or "").rpartition(":")[0]
    if target.endswith(".py"):
        files.append(target)
    if args.model_path and Path(args.model_path).is_dir():
        files += [str(p) for p in Path(args.model_path).iterdir() if p.is_file()]
    return files
