"""Entry point: ``attnprof [COMMAND] ...``; bare ``attnprof`` runs ``compare``.

Every :class:`~attnprof.errors.UsageError` ends here as one line on stderr and exit status 2.
A stop — Ctrl-C, SIGTERM, SIGHUP (see :mod:`attnprof.signals`) — ends here too, after the
command kept what had finished: exit status 130, 143 or 129 (128 + the signal). A run whose
record the store could not take after all is kept in a file, said where, exit status 3.
Commands import torch only when they run attention, so trace commands start fast.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import io
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, NoReturn

from attnprof._version import __version__
from attnprof.cli.flags import SharedFlags
from attnprof.cli.help_examples import add_examples
from attnprof.cli.outcome import Finished
from attnprof.cli.parser import Parser
from attnprof.cli.printing import devnull_for_closed_streams, quiet_when_reader_leaves
from attnprof.cli.storing import add_store_arguments
from attnprof.errors import UsageError
from attnprof.exit_codes import ExitCode
from attnprof.formatting import safe_text
from attnprof.signals import Terminated, exit_status, stop_signals_as_interrupts

if TYPE_CHECKING:
    from attnprof.store import Store

#: Every command's name and module (each has ``NAME``, ``add_parser(subparsers)`` and
#: ``run(args)``), in ``--help``'s order. By name, so that a run imports only its own
#: command's module and builds only its parser: all fourteen, with their flag helpers,
#: were 21 modules and 5-9 ms of ``attnprof analyze``'s start-up (issue 32).
_COMMAND_MODULES = {
    "compare": "attnprof.cli.compare_cmd", "profile": "attnprof.cli.profile_cmd",
    "analyze": "attnprof.cli.analyze_cmd", "check": "attnprof.cli.check_cmd",
    "model": "attnprof.cli.model_cmd", "sweep": "attnprof.cli.sweep_cmd",
    "limits": "attnprof.cli.limits_cmd", "recommend": "attnprof.cli.recommend_cmd",
    "runs": "attnprof.cli.runs_cmd", "show": "attnprof.cli.show_cmd",
    "diff": "attnprof.cli.diff_cmd", "env": "attnprof.cli.env_cmd",
    "report": "attnprof.cli.report_cmd", "project": "attnprof.cli.project_cmd",
}
DEFAULT_COMMAND = "compare"


def __getattr__(name: str) -> tuple[ModuleType, ...]:
    """``COMMANDS``: every command's module, imported when first asked for."""
    if name == "COMMANDS":
        return tuple(importlib.import_module(m) for m in _COMMAND_MODULES.values())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_parser(command: str | None = None) -> Parser:
    """The command line's parser: every command's, or only ``command``'s (what a run of
    it needs; ``--help`` of the others is then not there)."""
    parser = Parser(prog="attnprof",
                    description="Profile attention in PyTorch: compare variants side by side.")
    parser.add_argument("--version", action="version", version=f"attnprof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, module in _COMMAND_MODULES.items():
        if command is not None and name != command:
            continue
        found = importlib.import_module(module)
        found.add_parser(sub)
        if getattr(found, "SAVES_RECORDS", False):  # --store, --no-store, --label
            add_store_arguments(sub.choices[name], saving=True)
        add_examples(sub.choices[name], name)  # --help ends with examples
    return parser


def _with_default_command(argv: list[str]) -> list[str]:
    if not argv or (argv[0] not in _COMMAND_MODULES
                    and argv[0] not in ("-h", "--help", "--version")):
        return [DEFAULT_COMMAND, *argv]
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (also used by the console script)."""
    args_list = _with_default_command(list(sys.argv[1:] if argv is None else argv))
    with stop_signals_as_interrupts():
        try:
            # Only the command asked for (the first word, after the default is put in).
            command = args_list[0] if args_list[0] in _COMMAND_MODULES else None
            args = build_parser(command).parse_args(args_list)
            # Opened (and checked) before the command runs, so a bad store fails before
            # anything is measured; the record is stored here, for every command alike.
            # A command that declares OPENS_STORE opens it itself, by args.open_store,
            # before it does anything the store could make wasted (analyze: while its
            # child reads the trace).
            opening = _StoreOpening(args) if hasattr(args, "no_store") else None
            if opening is not None:
                args.open_store = opening
                if not _opens_store_itself(args_list[0]):
                    opening()
            try:
                outcome = args.run(args)
                if not isinstance(outcome, Finished):
                    return int(outcome or ExitCode.OK)
                store = opening() if opening is not None else None
                if store is not None and outcome.record is not None:
                    try:
                        _store(store, outcome, args, args_list)
                    except UsageError as exc:  # after the run: the run is kept, not lost
                        return _unsaved(store, outcome, exc)
                return outcome.status
            finally:
                if opening is not None and opening.store is not None:
                    opening.store.close()
        except UsageError as exc:
            # Messages quote the user's values (names, paths): escaped for the terminal.
            print(f"attnprof: error: {safe_text(str(exc), limit=None)}", file=sys.stderr)
            return UsageError.exit_code
        except KeyboardInterrupt as exc:
            print(f"attnprof: {exc if isinstance(exc, Terminated) else 'interrupted'}",
                  file=sys.stderr)
            return exit_status(exc)


def _opens_store_itself(command: str) -> bool:
    """Whether ``command``'s module declares ``OPENS_STORE`` (see :func:`main`)."""
    module = _COMMAND_MODULES.get(command)
    return module is not None and getattr(importlib.import_module(module), "OPENS_STORE",
                                          False)


class _StoreOpening:
    """The store a record-making command saves into, opened once, when first called: by
    :func:`main` before the command runs, or by the command itself (``args.open_store``)
    where its module declares ``OPENS_STORE``; by :func:`main` after the command at the
    latest, to save the record."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._args = args
        self._opened = False
        self.store: Store | None = None

    def __call__(self) -> Store | None:
        if not self._opened:
            self.store = _open_store(self._args)
            self._opened = True
        return self.store


def _open_store(args: argparse.Namespace) -> Store | None:
    """The store a record-making command saves into (:func:`~attnprof.commands.saving.
    open_for_saving`), from its flags."""
    flags = SharedFlags.of(args)
    if flags.no_store and flags.label is None:
        return None  # nothing to check or open: analyze --no-store starts without it
    from attnprof.commands.saving import open_for_saving

    return open_for_saving(flags.store, no_store=flags.no_store, label=flags.label)


def _store(store: Store, outcome: Finished, args: argparse.Namespace,
           argv: Sequence[str]) -> None:
    """Store the command's record; say where, beside the other "written to" lines."""
    from rich.text import Text

    from attnprof.commands.saving import store_record
    from attnprof.render.terminal import make_console

    assert outcome.record is not None
    run = store_record(store, outcome.record, label=SharedFlags.of(args).label, argv=argv,
                       prepared=outcome.prepared)
    make_console().print(Text(f"stored as run {safe_text(run.run_id)} in {store.shown} "
                              f"(attnprof show {safe_text(run.run_id)})", style="dim"))


def _unsaved(store: Store, outcome: Finished, exc: UsageError) -> int:
    """Keep the record the store refused at the save in a file, say so in one line;
    exit status 3 (the run finished, its storage did not), unless a gate failed (1)."""
    from attnprof.commands.saving import keep_unsaved

    assert outcome.record is not None
    kept = keep_unsaved(store, outcome.record)
    where = (f"its record is kept in {safe_text(kept)} (attnprof show reads it)" if kept
             else "no folder would take its record either: the run is lost")
    print(f"attnprof: error: {safe_text(str(exc), limit=None)}; the run finished but is not "
          f"stored: {where}", file=sys.stderr)
    return outcome.status if outcome.status == ExitCode.FAILED else ExitCode.UNSTORED


def console_main() -> NoReturn:
    """The ``attnprof`` command (and ``python -m attnprof``): :func:`main`, then exit.

    Before the interpreter shuts down, what is still alive is taken out of the cyclic
    collector's view (:func:`gc.freeze`): shutdown's full collections would otherwise walk
    every module, function and table left, some 25 ms of a 0.4 s ``attnprof analyze``,
    looking for garbage in a process that is about to end. Outputs are written and closed
    by then; shutdown itself (atexit hooks, flushing stdout) runs as usual. Not in
    :func:`main`, which tests and programs call in a process that goes on.

    A terminal or pipe whose encoding cannot hold a character attnprof prints (``·``,
    ``µ``, a kernel's name) shows it as an escape (``\\xb7``) instead of ending a finished
    run in a UnicodeEncodeError traceback: ``PYTHONIOENCODING=ascii``, a Latin-1 locale.
    A pipe whose reader leaves early ends the printing quietly, not the run
    (:func:`~attnprof.cli.printing.quiet_when_reader_leaves`).
    """
    devnull_for_closed_streams()  # `attnprof analyze T >&-`: the report goes nowhere
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")
    quiet_when_reader_leaves()  # `attnprof show RUN | head -1`: the run goes on
    status = main()
    gc.freeze()
    _end_without_teardown(status)
    sys.exit(status)


def _end_without_teardown(status: int) -> None:
    """End the process now, without the interpreter's teardown, where that teardown has
    nothing left to do for the user; return (to the ordinary exit) otherwise.

    Tearing down a trace command's 400 modules and the trace's tables is 10 ms of a 0.3 s
    ``attnprof analyze`` (CPU time, alternating pairs), after its outputs are written and
    closed. What the ordinary exit does that matters is done here first: the atexit hooks
    run, stdout and stderr are flushed. Only where it is safe to skip the rest: no thread
    is left that the exit would wait for, and torch (whose C++ side has its own teardown)
    was never imported. A flush that fails goes the ordinary way, which reports it.
    """
    import threading

    if "torch" in sys.modules or any(
            not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    import atexit
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()  # what they print is flushed below
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(status)


if __name__ == "__main__":
    console_main()
