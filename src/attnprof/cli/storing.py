"""The store, from the command line: the flags, and the one place records are saved.

A command that makes a record says so with ``SAVES_RECORDS = True`` and returns
:class:`~attnprof.cli.outcome.Finished` with its record; :func:`attnprof.cli.main.main`
opens the store before the command runs (a bad ``--store`` fails before anything is
measured) and saves the record after it, here. Commands never save it themselves. A save
that still fails after the run (a lock taken meanwhile, a full disk) does not lose the run:
:func:`keep_unsaved` writes its record to ``attnprof-unsaved-RUN.json``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from attnprof.cli.flags import SharedFlags

if TYPE_CHECKING:
    from attnprof.record.base import RecordBase
    from attnprof.record.environment import Ceilings
    from attnprof.store import PreparedRun, Store
    from attnprof.workload.problem import Workload

__all__ = ["UNSAVED_FILE", "add_store_arguments", "cached_ceilings", "keep_unsaved",
           "load_target", "open_for_saving", "prepare_saving",
           "save_record"]

#: The file a run's record is kept in when the store could not take it, ``{run}`` its id.
UNSAVED_FILE = "attnprof-unsaved-{run}.json"


def add_store_arguments(p: Any, *, saving: bool) -> None:
    """``--store`` (every command that reads or writes the store); ``--no-store`` and
    ``--label`` too for commands that save records."""
    g = p.add_argument_group("results store")
    g.add_argument("--store", metavar="PATH",
                   help="the results store (SQLite; default: $ATTNPROF_STORE, else runs.db "
                        "in the user's data folder)")
    if saving:
        g.add_argument("--no-store", action="store_true",
                       help="do not save this run in the results store")
        g.add_argument("--label", metavar="TEXT",
                       help="a label to find this run by later (attnprof show/diff LABEL)")


def open_for_saving(args: argparse.Namespace) -> Store | None:
    """The store a record-making command will save into, checked (and made) now; ``None``
    with ``--no-store``."""
    from attnprof.errors import UsageError
    from attnprof.store import STORE_ENV, store_path

    label = SharedFlags.of(args).label
    if label is not None and (not label.strip() or any(_unsafe_in_label(c) for c in label)):
        raise UsageError(f"--label {label!r} must be non-empty text on one line, without "
                         "control or bidi characters")
    path = store_path(args.store, no_store=args.no_store)
    if path is None:
        return None
    from attnprof.store import open_store  # sqlite3 and the record family: not for --no-store

    try:
        return open_store(path, create=True)
    except UsageError as exc:
        if args.store is not None or os.environ.get(STORE_ENV, "").strip():
            raise  # a store the user named: their mistake to fix before anything runs
        # The default store, in a home that may be read-only (a container, a CI sandbox):
        # the run is what was asked for, the store a convenience.
        print(f"attnprof: warning: {exc}; this run is not stored (choose one with --store, "
              "or --no-store)", file=sys.stderr)
        return None


#: The bidi marks, embeddings, overrides and isolates: they reorder what a terminal shows
#: after them, so a label holding U+202E can make a listing say what it does not.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                  "\u2066\u2067\u2068\u2069")


def _unsafe_in_label(char: str) -> bool:
    """A C0 or C1 control (newline, ESC, CSI ...), a line or paragraph separator, or a
    bidi character: what a label, shown in listings, may not hold."""
    import unicodedata

    return char in _BIDI or unicodedata.category(char) in ("Cc", "Zl", "Zp")


def prepare_saving(args: argparse.Namespace, record: RecordBase) -> PreparedRun | None:
    """Start working out what saving ``record`` waits on (:class:`~attnprof.store.
    PreparedRun`), in the background, for a command about to draw a large record's view:
    it returns it in :class:`~attnprof.cli.outcome.Finished` for :func:`save_record`.
    ``None`` with ``--no-store``."""
    if SharedFlags.of(args).no_store:
        return None
    from attnprof.store import PreparedRun

    return PreparedRun(record, os.getcwd())


def save_record(store: Store, record: RecordBase, args: argparse.Namespace,
                argv: Sequence[str], prepared: PreparedRun | None = None) -> None:
    """Save ``record`` with the label and the command line (``prepared``: as
    :func:`prepare_saving` began it); say where, beside the other "written to" lines."""
    from rich.text import Text

    from attnprof.formatting import safe_text
    from attnprof.render.terminal import make_console

    command = shlex.join(["attnprof", *argv])
    run = store.save(record, label=SharedFlags.of(args).label, command=command,
                     cwd=os.getcwd(), prepared=prepared)
    make_console().print(Text(f"stored as run {safe_text(run.run_id)} in {store.shown} "
                              f"(attnprof show {safe_text(run.run_id)})", style="dim"))


def keep_unsaved(store: Store, record: RecordBase) -> str | None:
    """Write ``record``, which ``store`` could not take, to :data:`UNSAVED_FILE` (atomically)
    in the current folder, else beside the store, else in the temporary folder; the path
    written, or ``None`` when no folder would take it."""
    import tempfile
    from pathlib import Path

    from attnprof.atomic import write_atomic
    from attnprof.errors import UsageError

    name = UNSAVED_FILE.format(run=record.run_id)
    data = record.to_json()
    for folder in (Path(os.getcwd()), store.path.parent, Path(tempfile.gettempdir())):
        path = folder / name
        try:
            write_atomic(path, data)
        except (UsageError, OSError):
            continue
        return str(path if folder != Path(os.getcwd()) else Path(name))
    return None


def load_target(args: argparse.Namespace, target: str) -> tuple[Any, Any]:
    """The record ``target`` names — a record file when one is there, else a stored run of
    ``--store`` — and the stored run's listing (``None`` for a file): see
    :func:`attnprof.commands.show.load_target`."""
    from attnprof.commands.show import load_target as load

    return load(target, args.store)


def cached_ceilings(args: argparse.Namespace, workload: Workload,
                    threads: int | None = None) -> Ceilings | None:
    """The ceilings ``attnprof env`` cached for this host, the workload's device and dtype,
    measured with this torch on the run's ``threads`` (``None``: as many as torch has now);
    ``None`` (measure them in the run) otherwise, or with ``--no-store``. A matmul's
    ceiling on one thread is half of it on two: a share of the other would be wrong."""
    import platform

    import torch  # the caller is about to measure: torch is loaded already

    from attnprof.store import open_store, store_path

    flags = SharedFlags.of(args)
    path = store_path(flags.store, no_store=flags.no_store)
    if path is None:
        return None
    with open_store(path, create=False) as store:
        profile = store.machine(platform.node() or "unknown", workload.device)
    if profile is None or profile.environment.torch != str(torch.__version__):
        return None
    if profile.environment.threads != (threads or torch.get_num_threads()):
        return None
    return profile.ceilings.get(workload.dtype)
