"""The one path a command's record is saved through (and found again by,
:func:`load_target`): to its ``--json`` file as the run
goes (after every variant or point, so a run stopped mid-way keeps what finished) and at
its end, and to the results store once it is over.

A command hands every save of its record file to :class:`RecordFile`; the command line
opens the store before the command runs (:func:`open_for_saving`: a bad ``--store`` fails
before anything is measured) and stores the finished record with :func:`store_record`. A
store that refuses the save after all (a lock taken meanwhile, a full disk) does not lose
the run: :func:`keep_unsaved` writes the record to :data:`UNSAVED_FILE`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from attnprof.record.base import RecordBase
    from attnprof.record.environment import Ceilings
    from attnprof.record.family import Record
    from attnprof.store import PreparedRun, Store, StoredRun
    from attnprof.workload.problem import Workload

__all__ = ["UNSAVED_FILE", "RecordFile", "cached_ceilings", "keep_unsaved", "load_target",
           "open_for_saving", "open_to_read", "store_record"]

#: The file a run's record is kept in when the store could not take it, ``{run}`` its id.
UNSAVED_FILE = "attnprof-unsaved-{run}.json"


R = TypeVar("R", bound="RecordBase")


class RecordFile(Generic[R]):
    """A record file written as a run goes: :meth:`save` after each finished part, and
    once more at the end; ``path`` ``None``: no file asked for, every save does nothing.
    :attr:`last` is the record last saved, so a stop can say what the file holds."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.last: R | None = None

    def save(self, record: R) -> None:
        """Write ``record`` to the file (atomically: a stop mid-write keeps the last)."""
        if self.path is not None:
            record.save(self.path)
            self.last = record

    @contextmanager
    def kept_on_stop(self, finished: Callable[[R, str], str],
                     unfinished: str) -> Iterator[RecordFile[R]]:
        """Around a run: on a stop (Ctrl-C, SIGTERM, SIGHUP: :mod:`attnprof.signals`), one
        line on stderr saying what the file holds — ``finished(record, path)`` once a save
        happened, ``unfinished`` (``{path}``: the file) before — and the stop goes on."""
        try:
            yield self
        except KeyboardInterrupt:
            if self.path is not None:
                from attnprof.formatting import safe_text

                path = safe_text(self.path)
                said = (finished(self.last, path) if self.last is not None
                        else unfinished.format(path=path))
                print(f"attnprof: {said}", file=sys.stderr)
            raise


def open_for_saving(store: str | None, *, no_store: bool, label: str | None) -> Store | None:
    """The store a record-making command will save into (``store``: the ``--store`` flag),
    checked (and made) now; ``None`` with ``no_store``. A bad ``label`` is refused here,
    before anything runs."""
    from attnprof.errors import UsageError
    from attnprof.store import STORE_ENV, store_path

    if label is not None and (not label.strip() or any(_unsafe_in_label(c) for c in label)):
        raise UsageError(f"--label {label!r} must be non-empty text on one line, without "
                         "control or bidi characters")
    path = store_path(store, no_store=no_store)
    if path is None:
        return None
    from attnprof.store import open_store  # sqlite3 and the record family: not for --no-store

    try:
        return open_store(path, create=True)
    except UsageError as exc:
        if store is not None or os.environ.get(STORE_ENV, "").strip():
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


def store_record(store: Store, record: RecordBase, *, label: str | None,
                 argv: Sequence[str], prepared: PreparedRun | None = None) -> StoredRun:
    """Save ``record`` in ``store`` with its label and the command line ``argv`` (the
    arguments after ``attnprof``); ``prepared``: the slow part of the save, begun while
    the command drew its view. :class:`~attnprof.errors.UsageError` when the store
    refuses it (the caller keeps it with :func:`keep_unsaved`)."""
    import shlex

    return store.save(record, label=label, command=shlex.join(["attnprof", *argv]),
                      cwd=os.getcwd(), prepared=prepared)


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


def cached_ceilings(store: str | None, no_store: bool, workload: Workload,
                    threads: int | None = None) -> Ceilings | None:
    """The ceilings ``attnprof env`` cached for this host in the store (``store``: the
    ``--store`` flag), the workload's device and dtype, measured with this torch on the
    run's ``threads`` (``None``: as many as torch has now); ``None`` (measure them in the
    run) otherwise, or with ``no_store``. A matmul's ceiling on one thread is half of it on
    two: a share of the other would be wrong."""
    import platform

    import torch  # the caller is about to measure: torch is loaded already

    from attnprof.store import open_store, store_path

    path = store_path(store, no_store=no_store)
    if path is None:
        return None
    with open_store(path, create=False) as opened:
        profile = opened.machine(platform.node() or "unknown", workload.device)
    if profile is None or profile.environment.torch != str(torch.__version__):
        return None
    if profile.environment.threads != (threads or torch.get_num_threads()):
        return None
    return profile.ceilings.get(workload.dtype)


def load_target(target: str, store: str | os.PathLike[str] | None = None
                ) -> tuple[Record, StoredRun | None]:
    """A saved record by what the user calls it: the record file ``target`` when there is
    one, else the stored run it names (id, unique prefix or label) in ``store`` (the
    ``--store`` flag; ``None``: ``$ATTNPROF_STORE``, else the default); with the stored
    run's listing (``None`` for a file)."""
    from pathlib import Path

    from attnprof.record.family import load_record

    path = Path(target)
    if path.is_file():
        return load_record(target), None
    if path.exists() and not path.is_dir():
        from attnprof.errors import UsageError
        from attnprof.formatting import safe_text

        raise UsageError(f"{safe_text(target)!r} is not a regular file; give a record file "
                         "or a stored run")
    with open_to_read(store) as opened:
        run = opened.find(target)
        return opened.load(run.run_id), run


def open_to_read(store: str | os.PathLike[str] | None) -> Store:
    """The store a reading command looks in (``None``: ``$ATTNPROF_STORE``, else the
    user's), checked; not created when absent (an absent store is an empty one)."""
    from attnprof.store import open_store, store_path

    path = store_path(None if store is None else os.fspath(store))
    assert path is not None
    return open_store(path, create=False)
