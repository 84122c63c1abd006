"""What every measuring command (compare, profile, check) does between parsing and
printing: check every output against the rules of :mod:`attnprof.outputs`, build the
workload and settings from the flags, then run the comparison with a progress bar,
saving the record after every variant.

Not a command: the commands share it, and it only turns flags into library calls.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnprof.cli.flags import SharedFlags
from attnprof.cli.precision_args import precision_fields
from attnprof.cli.storing import cached_ceilings
from attnprof.cli.workload_args import settings_from_args, workload_fields

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.outputs import Output
    from attnprof.record.compare import CompareRecord
    from attnprof.run.point import RecordKind


def measure(args: argparse.Namespace, console: Console, *, variants: list[str] | None,
            kind: RecordKind = "compare", json_path: str | None = None,
            trace_dir: str | None = None, trace_steps: int = 3, trace_flag: str = "--trace",
            other_outputs: Sequence[Output] = (), other_inputs: Sequence[str] = (),
            reports: bool = True) -> CompareRecord:
    """Validate everything, then measure with a progress bar, saving after every variant.

    ``args`` supplies what every measuring command shares (workload flags, ``--min-time``,
    ``--rounds``, ``--seed``, ``--executor``); the rest differs per command. Every output
    — the record, ``other_outputs``, the trace folder and each trace it will hold, the
    report's (``reports``: ``--html`` and every figure ``--plots`` may write) — is
    checked before anything runs (:func:`~attnprof.cli.planning.plan_outputs`), against
    each other, the store, the user's variant files and ``other_inputs``.
    """
    from attnprof.cli.planning import Figures, plan_outputs
    from attnprof.measure.capture import trace_file_name
    from attnprof.outputs import Output, create_folders
    from attnprof.workload.problem import Workload, check_given

    names = _variant_names(variants)
    outputs = [*([Output("--json", json_path)] if json_path is not None else []),
               *other_outputs]
    if trace_dir is not None:
        outputs.append(Output(trace_flag, trace_dir, folder=True,
                              files=tuple(trace_file_name(n) for n in names)))
    outputs = plan_outputs(args, outputs, [*variant_files(names), *other_inputs],
                           figures=Figures(kind, variants=names) if reports else None)
    # A mistake in the flags themselves is said before torch is imported (2 s of a typo's
    # answer): the workload's values the user gave, and the timing flags.
    fields = {**workload_fields(args), **precision_fields(args)}
    check_given(**fields)
    settings_from_args(args, Workload(device=fields.get("device") or "cpu")).validate()

    from attnprof.formatting import safe_text
    from attnprof.render.progress import ComparisonProgress
    from attnprof.run.compare import compare, prepare
    from attnprof.run.executors import get_executor

    workload, chosen = prepare(None, variants, **fields)
    settings = settings_from_args(args, workload, trace_dir=trace_dir,
                                  trace_steps=trace_steps).validate()
    create_folders(outputs)  # only now: a mistake found above leaves nothing behind
    name = SharedFlags.of(args).executor
    executor = None if name == "inline" else get_executor(name)
    saved: list[bool] = []  # whether this run wrote json_path yet

    def save(record: CompareRecord) -> None:
        assert json_path is not None
        record.save(json_path)
        saved.append(True)

    ceilings = (cached_ceilings(args, workload, settings.threads) if settings.measure_ceilings
                else None)
    with ComparisonProgress(console, [v.name for v in chosen]) as progress:
        try:
            return compare(workload, chosen, settings=settings, progress=progress.update,
                           on_result=save if json_path else None, executor=executor,
                           kind=kind, ceilings=ceilings)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM/SIGHUP (attnprof.signals)
            shown = safe_text(str(json_path))
            if json_path and saved:
                print(f"attnprof: interrupted; finished variants are in {shown}",
                      file=sys.stderr)
            elif json_path:
                print(f"attnprof: interrupted; no variant had finished, {shown} not written",
                      file=sys.stderr)
            raise


def _variant_names(variants: list[str] | None) -> list[str]:
    """The names the run will measure, as :func:`~attnprof.variants.resolve_variants` reads
    them, without importing any user file."""
    if not variants:
        from attnprof.variants import REGISTRY

        return list(REGISTRY)
    return list(dict.fromkeys(n.strip() for n in variants if n.strip()))


def variant_files(names: Sequence[str]) -> list[str]:
    """The user's variant files (``path/to/file.py:fn``): inputs no output may replace."""
    targets = (name.rpartition(":")[0] for name in names if ":" in name)
    return [t for t in targets if t and os.path.isfile(t)]
