"""``attnprof analyze TRACE...``: explain torch.profiler traces, without importing torch.

Each trace is loaded, analysed (regions, kernels per forward, op tree, time, memory,
findings) and printed. A folder stands for the traces in it (``*.json``, ``*.json.gz``, in
name order), as written by ``compare --trace`` or one file per rank by a distributed run;
attnprof's own records in it (an earlier ``--json`` written there) are not traces and are
left out, told by content. A quoted pattern (``'run/rank-*.json.gz'``) stands for the files
it matches. Every trace is read and analysed before anything is printed or written, so an
unreadable file named on the command line fails the command at once, with no output file
(status 2); an unreadable file in a folder is reported and the rest are analysed, printed
and written, with exit status 1. A trace taken while other work held its CPUs (its ops
ran far slower than their peers: :mod:`attnprof.analysis.contended_steps`) is shown and
written with its figures marked, and the status is 3 (1 outranks it).

When the traces are the ranks of one distributed run (:mod:`attnprof.commands.analyze`),
they are read together, in worker processes, and shown as one cross-rank view; a rank that
cannot be read is a row with its error (exit status 1).

This module only parses flags into an :class:`~attnprof.commands.analyze.AnalyzeRequest`,
calls :func:`attnprof.commands.analyze.run` and hands the record to the renderers and the
outputs. One trace is read and analysed in a forked child while this process opens the
store and imports the views, and its report's head is drawn while the child finishes
(:func:`_worth_a_child`); ``ATTNPROF_ANALYZE_INLINE=1`` keeps it in one process.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from attnprof.cli.outcome import Finished, print_written
from attnprof.cli.reports import add_report_arguments, write_reports
from attnprof.cli.storing import prepare_saving
from attnprof.exit_codes import ExitCode

if TYPE_CHECKING:
    from collections.abc import Callable

    from attnprof.commands.analyze import AnalyzeRequest
    from attnprof.outputs import Output
    from attnprof.record.analyze import AnalyzeRecord
    from attnprof.record.trace_report import TraceReport
    from attnprof.render.kinds.analyze import TwoPartDrawing

NAME = "analyze"
SAVES_RECORDS = True
#: run opens the store itself (``args.open_store``), while its child reads the trace.
OPENS_STORE = True
#: Set (to anything but empty) to keep ``attnprof analyze`` of one trace in one process.
INLINE_ENV = "ATTNPROF_ANALYZE_INLINE"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="explain torch.profiler traces (kernels, ops, findings)",
                       description="Analyse torch.profiler Chrome traces (.json or .json.gz): "
                                   "kernels per forward, op tree, CPU vs device time, memory "
                                   "and findings with evidence and fixes.")
    p.add_argument("traces", nargs="+", metavar="TRACE",
                   help="trace files to analyse, folders of them, or a quoted pattern "
                        "('run/rank-*.json.gz'); the ranks of one distributed run are read "
                        "together")
    p.add_argument("--json", metavar="PATH", help="write the analysis (JSON) to PATH")
    p.add_argument("--csv", metavar="PATH",
                   help="write one line per region (one per rank for a rank set) to PATH")
    p.add_argument("--top", type=int, default=15, metavar="N",
                   help="rows per table (default 15)")
    p.add_argument("--region", metavar="REGEX",
                   help="treat the user annotations (record_function labels) matching REGEX "
                        "as the regions, instead of attnprof::* or ProfilerStep#N (each trace "
                        "is then analysed on its own)")
    ranks = p.add_argument_group("the ranks of a distributed run")
    ranks.add_argument("--each", action="store_true",
                       help="analyse every trace on its own even when they are one run's "
                            "ranks (the single-trace report of each)")
    ranks.add_argument("--executor", choices=("process", "inline", "ray"), default="process",
                       help="where ranks are read: local worker processes (default), this "
                            "process, or a Ray cluster (each task opens its trace: paths must "
                            "be on storage every node sees)")
    ranks.add_argument("--workers", type=int, metavar="N",
                       help="ranks read at once (default: the cores; Ray: the cluster's CPUs)")
    ranks.add_argument("--ray-address", metavar="HOST:PORT",
                       help="the Ray cluster for --executor ray (default: RAY_ADDRESS, else a "
                            "local instance)")
    add_report_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> Finished:
    _no_blas_threads()
    _fewer_collections()
    # Large numpy arrays from malloc's heap, freed memory kept for the next one: each array
    # above glibc's mmap threshold would otherwise get fresh pages to fault in (analysis is
    # a quarter faster on a 1 GiB trace; 18 ms of the 0.4 s of a 50 MB one). The same state
    # compare uses by default; only this short-lived process is affected.
    from attnprof.measure.allocator import set_cpu_allocator

    set_cpu_allocator("reuse")  # elsewhere than glibc it says why; analyze runs on regardless

    from attnprof.cli.planning import Figures, plan_outputs
    from attnprof.commands.analyze import request_for_traces
    from attnprof.commands.analyze import run as analyze
    from attnprof.errors import UsageError
    from attnprof.outputs import Output, create_folders
    from attnprof.record.ranks import RanksRecord

    if args.top <= 0:
        raise UsageError(f"--top must be a positive integer, got {args.top}")
    request = request_for_traces(args.traces, region=args.region,
                                 ranks="each" if args.each else "auto",
                                 executor=args.executor, workers=args.workers,
                                 ray_address=args.ray_address)
    outputs = [Output(flag, path) for flag, path in (("--json", args.json), ("--csv", args.csv))
               if path is not None]

    def check_outputs() -> list[Output]:
        return plan_outputs(args, outputs, list(request.paths),
                            figures=Figures("analyze", traces=len(request.paths)))

    progress = _Progress()
    beside = _Beside(args, check_outputs) if _worth_a_child(request) else None
    try:
        if beside is not None:
            from attnprof.record.analyze import AnalyzeRecord
            from attnprof.record.trace_report import TraceReport
            from attnprof.run.executors.forked import ChildDied, Send, call_in_child

            def in_child(send: Send) -> AnalyzeRecord:
                progress.heads = send  # the report's head, to draw while the child goes on
                return analyze(request, progress)  # type: ignore[return-value]

            try:
                record = call_in_child(in_child, returns=AnalyzeRecord, meanwhile=beside.ready,
                                       part=TraceReport, on_part=beside.head)
            except ChildDied as exc:  # a crash reading it: say which file, as for a bad one
                raise UsageError(f"trace file {request.paths[0]!r} could not be analysed: "
                                 f"{exc}; please report this with the file (and run with "
                                 f"{INLINE_ENV}=1 to see where)") from None
        else:
            plan = check_outputs()
            args.open_store()
            create_folders(plan)
            record = analyze(request, progress)
    finally:
        progress.close()
    if isinstance(record, RanksRecord):  # a rank set's record (and view) holds the notes
        return _show(record, args, unreadable=[(r.source, r.error) for r in record.unreadable
                                               if r.error is not None])
    return _show(record, args, unreadable=[(bad.source, bad.reason)
                                           for bad in record.unreadable], beside=beside)


class _Progress:
    """Notes on stderr; a bar over the ranks when they are a set (only where stderr is a
    terminal)."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._tty = sys.stderr.isatty()
        #: Where a trace's head goes (the child's ``send``); None: nowhere.
        self.heads: Callable[[TraceReport], None] | None = None

    def trace_head(self, report: TraceReport) -> None:
        if self.heads is not None:
            self.heads(report)

    def note(self, text: str) -> None:
        from attnprof.formatting import safe_text

        print(f"attnprof: note: {safe_text(text, limit=None)}", file=sys.stderr)

    def rank_read(self, done: int, total: int, summary: object) -> None:
        if self._bar is None:
            _ready_to_show(done, total, summary)
        if not self._tty:
            return
        if self._bar is None:
            from attnprof.render.progress import RankProgress

            self._bar = RankProgress(total).__enter__()
        self._bar.update(done, total, summary)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


def _ready_to_show(done: int, total: int, summary: object) -> None:
    """At the first rank read, import what showing the set takes (rich, the renderers and
    the set's view: 20-40 ms): this process only waits for its workers meanwhile, and
    after them everything it does is on the way to the end."""
    if done != 1:
        return
    import attnprof.render.json_record
    import attnprof.render.ranks_view
    import attnprof.render.terminal  # noqa: F401


def _worth_a_child(request: AnalyzeRequest) -> bool:
    """Whether to read and analyse the trace in a forked child while this process gets
    ready to show and store it (:func:`~attnprof.run.executors.forked.call_in_child`).

    A fresh ``attnprof analyze`` has two halves of work that do not depend on each other:
    the trace's (importing numpy and the analysis, loading, the passes: some 155 ms of a
    216k-event trace) and the report's (checking the outputs, opening the store,
    importing rich, the views and the renderers: some 30 ms). In one process they follow
    each other on one core while a second one idles; side by side, with the report's head
    drawn while the child works out the findings, the command ends about a tenth sooner
    (0.905x on the 2-core development VM, benchmarks/README.md). Only for one trace file
    (a rank set has worker processes of its own; several traces are analysed in turn),
    where forking pays (:func:`~attnprof.run.executors.forked.fork_pays`), in a process
    that has not imported the analysis yet (a fresh command, not a program or a test
    calling :func:`~attnprof.cli.main.main` again), and unless :data:`INLINE_ENV` is set.
    """
    import os

    from attnprof.run.executors.forked import fork_pays

    return (len(request.paths) == 1 and not os.environ.get(INLINE_ENV)
            and "attnprof.analysis.analyze" not in sys.modules and fork_pays())


class _Beside:
    """The parent's side while its child analyses the trace (:func:`_worth_a_child`): getting
    ready, then drawing the report's head as soon as the child sends it, while the child
    works out the findings (:class:`~attnprof.render.kinds.analyze.TwoPartDrawing`)."""

    def __init__(self, args: argparse.Namespace,
                 check_outputs: Callable[[], list[Output]]) -> None:
        self.args, self.check_outputs = args, check_outputs
        self.drawing: TwoPartDrawing | None = None
        #: The working folder's git state, for the store (None: not asked, --no-store).
        self.git: tuple[str | None, bool | None] | None = None

    def ready(self) -> None:
        """What showing and saving the analysis takes: the outputs checked (a bad one fails
        the command as before: the child is stopped, nothing is written), the store opened
        and checked and the folder's git state read for it, the outputs' folders made, and
        rich, the report's view and the renderers imported."""
        from attnprof.outputs import create_folders

        plan = self.check_outputs()
        if self.args.open_store() is not None:  # what the store records of the folder
            import os

            from attnprof.store.git import git_state

            self.git = git_state(os.getcwd())
        create_folders(plan)
        import attnprof.render.json_record  # noqa: F401
        from attnprof.render.kinds.analyze import TwoPartDrawing
        from attnprof.render.terminal import TerminalRenderer, warm_character_widths

        warm_character_widths()
        self.drawing = TwoPartDrawing(TerminalRenderer.for_stdout(top=self.args.top))

    def head(self, report: TraceReport) -> None:
        assert self.drawing is not None  # ready() ran first
        self.drawing.head(report)

    def text(self, record: AnalyzeRecord) -> str:
        assert self.drawing is not None
        return self.drawing.text(record)


def _show(record: Any, args: argparse.Namespace, unreadable: list[tuple[str, str]],
          beside: _Beside | None = None) -> Finished:
    """Print the record, write the outputs asked for, say what could not be read; the exit
    status (1 when something could not be read) and the record, for the store. ``beside``:
    what the process did while its child analysed (the view begun, the git state read)."""
    from attnprof.formatting import safe_text
    from attnprof.render import JsonRenderer, TerminalRenderer, write_rendered
    from attnprof.render.terminal import make_console

    # The store's copy (compressed: 50 ms for 64 ranks) is made while the view is drawn.
    prepared = prepare_saving(args, record, git=beside.git if beside is not None else None)
    draw = beside.text if beside is not None else TerminalRenderer.for_stdout(top=args.top).render
    sys.stdout.write(draw(record))
    console = make_console()
    if args.json:
        write_rendered(JsonRenderer(), record, args.json)
    if args.csv:
        from attnprof.render import CsvRenderer

        write_rendered(CsvRenderer(), record, args.csv)
    print_written(console, [("analysis", args.json), ("CSV", args.csv)])
    write_reports(args, record, console)
    if unreadable:
        files = ", ".join(safe_text(source) for source, _ in unreadable)
        print(f"attnprof: {len(unreadable)} file(s) could not be read as traces and "
              f"were skipped (reasons above): {files}", file=sys.stderr)
        return Finished(ExitCode.FAILED, record, prepared)
    contended = [r.source for r in (record.reports if record.kind == "analyze" else [])
                 if r.contention is not None and r.contention.marked]
    if contended:
        print(f"attnprof: {len(contended)} trace(s) were taken while other work held their "
              f"CPUs; their figures are marked (see the contended-trace finding): "
              f"{', '.join(safe_text(s) for s in contended)}", file=sys.stderr)
        return Finished(ExitCode.UNMEASURED, record, prepared)
    return Finished(ExitCode.OK, record, prepared)


def _fewer_collections() -> None:
    """Run the cyclic garbage collector after 100,000 new objects instead of 700: the
    import of the analysis and the views, and the analysis itself, make objects that live
    (modules, functions, classes, the tables' strings), so the collector's 90 or so passes
    over them found nothing while they cost 8 ms of a 0.27 s run. The analysis makes few
    cycles, and runs no user code that could fill memory with them; only this short-lived
    process is affected."""
    import gc

    gc.set_threshold(100_000, 50, 50)


def _no_blas_threads() -> None:
    """Keep numpy's OpenBLAS from starting a thread per core when it is imported: the
    analysis does no linear algebra, and starting them is 30-60 ms of a 2-core machine's
    start-up. Only in a fresh process (numpy not imported yet) and unless the user set it."""
    import os
    import sys

    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
