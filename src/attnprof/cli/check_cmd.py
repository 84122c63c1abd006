"""``attnprof check --expect FILE TARGET``: expected vs observed, exit 1 on any mismatch.

TARGET is a trace file (analysed as ``attnprof analyze`` would) or a variant name (measured
and traced as ``attnprof profile`` would, with the workload flags). Exit status: 0 when every
expectation holds, 1 when any does not, 2 for a malformed expectations file or any other
user mistake.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from attnprof.cli.outcome import Finished, print_written
from attnprof.cli.reports import add_report_arguments, write_reports
from attnprof.cli.workload_args import add_timing_arguments, add_workload_arguments
from attnprof.exit_codes import ExitCode

NAME = "check"
SAVES_RECORDS = True


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="check a variant or trace against an expectations file",
                       description="State what you expect per forward (TOML: kernels or ops "
                                   "by pattern and count, kernels per forward, latency, "
                                   "memory); see what ran; exit 1 on any mismatch.")
    p.add_argument("target", metavar="VARIANT_OR_TRACE",
                   help="a variant name (measured and traced now) or a trace file")
    p.add_argument("--expect", required=True, metavar="FILE", help="expectations (TOML)")
    add_workload_arguments(p)
    p.add_argument("--steps", type=int, default=3, metavar="N",
                   help="profiled steps when TARGET is a variant (default 3)")
    add_timing_arguments(p)
    p.add_argument("--json", metavar="PATH",
                   help="write the check's record (rows, verdict, the trace's analysis) to PATH")
    add_report_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> Finished:
    import sys

    from attnprof.analysis.check import check_expectations, pick_region
    from attnprof.cli.measuring import variant_files
    from attnprof.cli.planning import Figures, plan_outputs
    from attnprof.knowledge.annotations import region_name
    from attnprof.outputs import Output, create_folders
    from attnprof.record.check import CheckRecord
    from attnprof.render.terminal import TerminalRenderer, make_console
    from attnprof.workload.expectations import load_expectations

    expectations = load_expectations(args.expect)  # a malformed file fails before any work
    trace = _is_trace(args.target)
    plan = plan_outputs(args, [Output("--json", args.json)] if args.json is not None else [],
                        [args.expect, *([args.target] if trace else
                                        variant_files([args.target]))],
                        figures=Figures("check"))
    console = make_console()
    measured_now = None  # a variant is measured now: its workload and environment are kept
    if trace:
        report, measured, wanted = _from_trace(args.target), None, expectations.region
        source = args.target
    else:
        measured_now, measured, source = _from_variant(args, console)
        report = measured_now.results[0].analysis
        wanted = expectations.region or region_name(args.target)
    region = pick_region(report, wanted)
    rows = check_expectations(expectations, region, measured)
    record = CheckRecord(
        expectations=args.expect, title=expectations.title, target=args.target, source=source,
        region=region.name, rows=rows, report=report, status="complete",
        workload=measured_now.workload if measured_now else None,
        environment=measured_now.environment if measured_now else None)
    create_folders(plan)  # a --plots folder yet to be made (a --json may be in it)
    sys.stdout.write(TerminalRenderer.for_stdout().render(record))
    if args.json:
        record.save(args.json)
        print_written(console, [("record", args.json)])
    write_reports(args, record, console)
    return Finished(ExitCode.OK if record.ok else ExitCode.FAILED, record)


def _is_trace(target: str) -> bool:
    from attnprof.errors import UsageError

    path = Path(target)
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        return True  # any file (a FIFO, a dangling link: load_trace says what is wrong)
    if target.endswith((".json", ".json.gz")):
        raise UsageError(f"trace file {target!r} does not exist; check the path")
    return False


def _from_trace(path: str) -> Any:
    from attnprof.analysis.analyze import analyze_trace
    from attnprof.trace import load_trace

    return analyze_trace(load_trace(path))


def _from_variant(args: argparse.Namespace, console: Any) -> tuple[Any, Any, str]:
    import tempfile  # here, not at the top: every command's start-up imports this module

    from attnprof.analysis.check import Measured
    from attnprof.cli.measuring import measure
    from attnprof.errors import UsageError

    if args.steps <= 0:
        raise UsageError(f"--steps must be a positive integer, got {args.steps}")
    with tempfile.TemporaryDirectory(prefix="attnprof-check-") as tmp:
        record = measure(args, console, variants=[args.target], kind="profile",
                         trace_dir=tmp, trace_steps=args.steps, reports=False)
    (row,) = record.results
    if row.status != "ok" or row.analysis is None:
        raise UsageError(f"variant {args.target!r} did not run here ({row.status}: "
                         f"{row.reason}); choose a variant this device supports")
    latency = row.latency_ms.median if row.latency_ms else None
    source = f"{args.target} measured now: {record.workload.describe()}"
    return (record, Measured(latency_ms=latency, peak_memory_bytes=row.peak_memory_bytes),
            source)
