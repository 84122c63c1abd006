"""The rules every command's outputs obey, checked together before any work starts.

One path alone is checked by :mod:`attnprof.atomic` (a regular file or nothing, outside
``/proc`` and ``/sys``, in a writable folder). What only the whole command line can tell
is checked here:

* an output must not be one of the command's inputs — ``attnprof analyze T --json T``
  would replace the trace it reads — compared by device and inode where the file exists,
  so a symlink or a hard link to the input is caught too;
* two outputs of one run must not be one file (``--json X --csv X``), nor a file an
  output folder will hold (``--trace D --json D/naive.pt.trace.json.gz``, ``--plots D
  --json D/latency.svg``): a folder's output lists every file the run will write in it,
  by its final name;
* no output may be a protected file — the results store and its ``-wal``, ``-shm`` and
  ``-journal`` siblings, however the store was named — compared as inputs are;
* a file the run names itself inside an output folder (a trace, a figure) must be absent
  or a regular file, never a link: the user named the folder, not the link, so a link
  there (``P/latency.svg`` pointing at the user's variant file) is never theirs to follow.
  A file the user names (``--json LINK``) is written through the link, as
  :mod:`attnprof.atomic` says.

Each command lists its outputs as :class:`Output` and calls :func:`check_outputs` (the
command line's seam, :mod:`attnprof.cli.planning`, adds the report outputs and the store);
folders are created (and proven writable) by :func:`create_folders` once everything else
has been validated, so a mistake found later leaves nothing behind. A folder may lie in
another output folder yet to be made (``--plots P`` with one sub-folder per record).
See docs/outputs.md.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

import msgspec

from attnprof.atomic import (
    check_trace_dir,
    check_writable,
    describe_mode,
    make_folder,
    refuse_foreign,
    status,
)
from attnprof.errors import UsageError

__all__ = ["Output", "check_outputs", "create_folders"]


class Output(msgspec.Struct, frozen=True):
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
                  inputs: Iterable[str | os.PathLike[str]] = (),
                  protected: Iterable[tuple[str, str | os.PathLike[str]]] = ()) -> None:
    """Raise :class:`UsageError` for the first output that may not be written: a bad
    path, a link or anything but a regular file among a folder's files, one that is an
    input or a ``protected`` file (``(what it is, path)``, e.g. the results store), or one
    that another output of the run already claims."""
    folders = {_identity(Path(o.path)) for o in outputs if o.folder}
    # Folders first, outer before inner: a sub-folder of one yet to be made is checked
    # against the folder's plan, not against a parent that is not there yet.
    for out in sorted(outputs, key=lambda o: (not o.folder, len(Path(o.path).parts))):
        parent = _identity(Path(out.path).parent)
        inside = parent in folders and parent != _identity(Path(out.path))  # "" is "."
        if out.folder:
            _check_folder(out, inside)
        elif inside:
            refuse_foreign(out.path, out.flag)  # in an output folder, made before writing
        else:
            check_writable(out.path, out.flag)
    read = {_identity(Path(p)): os.fspath(p) for p in inputs if os.path.exists(p)}
    kept = {_identity(Path(p)): what for what, p in protected}
    claimed: dict[tuple[object, ...], str] = {}
    for out in outputs:
        for label, path in out.claims():
            key = _identity(path)
            if key in read:
                raise UsageError(f"{label} is the input {read[key]!r}; writing it would "
                                 "destroy what this command reads: choose another path")
            if key in kept:
                raise UsageError(f"{label} is {kept[key]}; writing it would destroy it: "
                                 "choose another path")
            if key in claimed:
                raise UsageError(f"{label} is the same file as {claimed[key]}; give each "
                                 "output a path of its own")
            claimed[key] = label


def _check_folder(out: Output, inside: bool) -> None:
    """An output folder: absent (its parent writable, or itself an output folder) or a
    writable folder; each file the run will write in it absent or a regular file, not a
    link."""
    if inside:  # in an output folder: made by create_folders, outer first
        found = status(Path(out.path), out.flag)
        if found is not None and not stat.S_ISDIR(found.st_mode):
            raise UsageError(f"{out.flag} {out.path!r} is {describe_mode(found.st_mode)}; "
                             "move it away or choose another folder")
        if os.path.islink(out.path):
            raise UsageError(f"{out.flag} {out.path!r} is a symbolic link, and attnprof "
                             "writes into it on its own; remove the link or choose "
                             "another folder")
    else:
        check_trace_dir(out.path, out.flag)
    for name in out.files:  # each file it will replace, e.g. a FIFO left there
        path = Path(out.path) / name
        if os.path.islink(path):
            raise UsageError(f"{out.flag} {out.path!r}: its {name!r} is a symbolic link "
                             f"(to {os.readlink(path)!r}); attnprof writes that file and "
                             "never follows a link it did not name: remove the link or "
                             "choose another folder")
        refuse_foreign(path, f"{out.flag} {out.path!r}: its")


def create_folders(outputs: Sequence[Output]) -> None:
    """Create the output folders (outer before inner) and prove each can hold a file."""
    for out in sorted(outputs, key=lambda o: len(Path(o.path).parts)):
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
