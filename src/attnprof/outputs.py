"""The rules every command's outputs obey, checked together before any work starts.

One path alone is checked by :mod:`attnprof.atomic` (a regular file or nothing, outside
``/proc`` and ``/sys``, in a writable folder). What only the whole command line can tell
is checked here:

* an output must not be one of the command's inputs — ``attnprof analyze T --json T``
  would replace the trace it reads — compared by device and inode where the file exists,
  so a symlink or a hard link to the input is caught too;
* two outputs of one run must not be one file (``--json X --csv X``), nor a file an
  output folder will hold (``--trace D --json D/naive.pt.trace.json.gz``).

Each command lists its outputs as :class:`Output` and calls :func:`check_outputs`; folders
are created (and proven writable) by :func:`create_folders` once everything else has been
validated, so a mistake found later leaves nothing behind.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from attnprof.atomic import check_trace_dir, check_writable, make_folder, refuse_foreign
from attnprof.errors import UsageError

__all__ = ["Output", "check_outputs", "create_folders"]


@dataclass(frozen=True)
class Output:
    """One output a command will write: a file, or a folder and the files it will hold."""

    flag: str
    path: str
    folder: bool = False
    #: For a folder: the names of the files the run will write in it.
    files: tuple[str, ...] = ()

    def claims(self) -> list[tuple[str, Path]]:
        """Every path this output writes, each with how to name it in a message."""
        own = [(f"{self.flag} {self.path!r}", Path(self.path))]
        if not self.folder:
            return own
        return own + [(f"{self.flag} {self.path!r} (its {name})", Path(self.path) / name)
                      for name in self.files]


def check_outputs(outputs: Sequence[Output],
                  inputs: Iterable[str | os.PathLike[str]] = ()) -> None:
    """Raise :class:`UsageError` for the first output that may not be written: a bad
    path, one that is an input, or one that another output of the run already claims."""
    folders = {_identity(Path(o.path)) for o in outputs if o.folder}
    for out in sorted(outputs, key=lambda o: not o.folder):  # folders first
        if out.folder:
            check_trace_dir(out.path, out.flag)
            for name in out.files:  # each file it will replace, e.g. a FIFO left there
                refuse_foreign(Path(out.path) / name, f"{out.flag} {out.path!r}: its")
        elif _identity(Path(out.path).parent) in folders:
            refuse_foreign(out.path, out.flag)  # in an output folder, made before writing
        else:
            check_writable(out.path, out.flag)
    read = {_identity(Path(p)): os.fspath(p) for p in inputs if os.path.exists(p)}
    claimed: dict[tuple[object, ...], str] = {}
    for out in outputs:
        for label, path in out.claims():
            key = _identity(path)
            if key in read:
                raise UsageError(f"{label} is the input {read[key]!r}; writing it would "
                                 "destroy what this command reads: choose another path")
            if key in claimed:
                raise UsageError(f"{label} is the same file as {claimed[key]}; give each "
                                 "output a path of its own")
            claimed[key] = label


def create_folders(outputs: Sequence[Output]) -> None:
    """Create the output folders and prove each can hold a file."""
    for out in outputs:
        if out.folder:
            make_folder(out.path, out.flag)


def _identity(path: Path) -> tuple[object, ...]:
    """What makes two paths one file: device and inode when it exists (symlinks followed,
    hard links alike), else the resolved path it would be created at."""
    try:
        st = os.stat(path)
    except OSError:  # absent (the per-path checks above reported any other failure)
        return ("path", os.path.normcase(os.path.realpath(path)))
    return ("inode", st.st_dev, st.st_ino)
