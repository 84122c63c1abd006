"""What every measuring command (compare, profile, check) does between parsing and
printing: build the workload and settings from the flags, then run the comparison with a
progress bar, saving the record after every variant.

Not a command: the commands share it, and it only turns flags into library calls.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from attnprof.cli.workload_args import settings_from_args, workload_fields

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.compare import CompareRecord
    from attnprof.run.point import RecordKind


def measure(args: argparse.Namespace, console: Console, *, variants: list[str] | None,
            kind: RecordKind = "compare", json_path: str | None = None,
            trace_dir: str | None = None, trace_steps: int = 3) -> CompareRecord:
    """Validate everything, then measure with a progress bar, saving after every variant.

    ``args`` supplies what every measuring command shares (workload flags, ``--min-time``,
    ``--rounds``, ``--seed``, ``--executor``); the rest differs per command.
    """
    from attnprof.atomic import check_trace_dir, check_writable
    from attnprof.render.progress import ComparisonProgress
    from attnprof.run.compare import compare, prepare
    from attnprof.run.executors import get_executor

    if json_path:
        check_writable(json_path)
    traces = str(check_trace_dir(trace_dir)) if trace_dir else None
    workload, chosen = prepare(None, variants, **workload_fields(args))
    settings = settings_from_args(args, workload, trace_dir=traces,
                                  trace_steps=trace_steps).validate()
    name = getattr(args, "executor", "inline")
    executor = None if name == "inline" else get_executor(name)
    saved: list[bool] = []  # whether this run wrote json_path yet

    def save(record: CompareRecord) -> None:
        assert json_path is not None
        record.save(json_path)
        saved.append(True)

    with ComparisonProgress(console, [v.name for v in chosen]) as progress:
        try:
            return compare(workload, chosen, settings=settings, progress=progress.update,
                           on_result=save if json_path else None, executor=executor,
                           kind=kind)
        except KeyboardInterrupt:
            if json_path and saved:
                print(f"attnprof: interrupted; finished variants are in {json_path}",
                      file=sys.stderr)
            elif json_path:
                print(f"attnprof: interrupted; no variant had finished, {json_path} not written",
                      file=sys.stderr)
            raise
