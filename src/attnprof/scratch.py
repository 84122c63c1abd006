"""Scratch folders that outlive no run, even one whose worker was killed.

A worker process that dies — a segfault, the OOM killer, SIGKILL for a hang past the time
limit — runs no clean-up, so a temporary folder it made (a model's traces when no
``--trace`` folder was asked for) would stay in ``/tmp`` for good. The parent therefore
makes one scratch folder per worker, names it to the worker in :data:`SCRATCH_ENV`, and
removes it once the worker has ended however it ended; the worker makes its temporary
folders inside. (Not ``TMPDIR``: torch's compile caches live under the temporary folder,
and a worker must find the ones earlier runs filled.)

A parent killed with SIGKILL (or by the OOM killer) runs no clean-up either, so each
folder's name carries its parent's process id, and the next run's first worker removes the
folders of parents that are gone (:func:`remove_orphaned`): only this user's, only real
folders, never one whose parent still runs.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

__all__ = ["SCRATCH_ENV", "remove_orphaned", "scratch_dir", "worker_scratch"]

#: The environment variable that names a worker's scratch folder (set by its parent).
SCRATCH_ENV = "ATTNPROF_SCRATCH"
#: The start of a worker's scratch folder's name; the parent's process id follows.
WORKER_PREFIX = "attnprof-worker-"
_OWNED = re.compile(re.escape(WORKER_PREFIX) + r"(\d+)-")
_swept = False


def worker_scratch() -> tempfile.TemporaryDirectory[str]:
    """A scratch folder for one worker of this process, named with this process's id;
    the first one a process makes also removes those of parents that are gone."""
    global _swept
    if not _swept:
        _swept = True
        remove_orphaned()
    return tempfile.TemporaryDirectory(prefix=f"{WORKER_PREFIX}{os.getpid()}-")


def remove_orphaned(where: str | None = None) -> list[str]:
    """Remove the worker scratch folders in ``where`` (default: the temporary folder)
    whose parent process is gone; the names removed. A folder is left when its parent
    runs, when it is not this user's, or when it is not a real folder (a link)."""
    folder = where or tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(folder) if n.startswith(WORKER_PREFIX)]
    except OSError:
        return []
    removed = []
    for name in names:
        owner = _OWNED.match(name)
        if owner is None or _running(int(owner.group(1))):
            continue
        path = os.path.join(folder, name)
        try:
            found = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
            continue
        shutil.rmtree(path, ignore_errors=True)  # links inside are removed, not followed
        removed.append(name)
    return removed


def _running(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts: it may be the
    parent, so its folder is left)."""
    if pid <= 0 or pid > 1 << 22:  # Linux's largest pid is 2**22
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def scratch_dir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A temporary folder: inside the parent's scratch folder when this process is a
    worker given one, else in the system's temporary folder. Use it as a context."""
    parent = os.environ.get(SCRATCH_ENV)
    inside = parent if parent and Path(parent).is_dir() else None
    return tempfile.TemporaryDirectory(prefix=prefix, dir=inside)
