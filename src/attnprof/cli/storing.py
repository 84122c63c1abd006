"""The store, from the command line: its flags, and what saving a large record waits on.

A command that makes a record says so with ``SAVES_RECORDS = True`` and returns
:class:`~attnprof.cli.outcome.Finished` with its record; :func:`attnprof.cli.main.main`
opens the store before the command runs (a bad ``--store`` fails before anything is
measured) and stores the record after it, through :mod:`attnprof.commands.saving`, the one
path records are saved by (a save refused after the run keeps the record in a file).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from attnprof.cli.flags import SharedFlags

if TYPE_CHECKING:
    from attnprof.record.base import RecordBase
    from attnprof.store import PreparedRun

__all__ = ["add_store_arguments", "prepare_saving"]


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


def prepare_saving(args: argparse.Namespace, record: RecordBase,
                   git: tuple[str | None, bool | None] | None = None) -> PreparedRun | None:
    """Start working out what saving ``record`` waits on (:class:`~attnprof.store.
    PreparedRun`), in the background, for a command about to draw a large record's view:
    it returns it in :class:`~attnprof.cli.outcome.Finished` for
    :func:`~attnprof.commands.saving.store_record`. ``git``: the working folder's git
    state, where the command has it already (:func:`~attnprof.store.git.git_state`).
    ``None`` with ``--no-store``."""
    if SharedFlags.of(args).no_store:
        return None
    from attnprof.store import PreparedRun

    return PreparedRun(record, os.getcwd(), git=git)
