"""What saving a record waits on longest, worked out ahead: its compressed JSON and the git
state of the working folder (:class:`PreparedRun`)."""

from __future__ import annotations

import threading
import zlib

import msgspec

from attnprof.record.base import RecordBase
from attnprof.store.git import git_state

__all__ = ["PreparedRun"]


class PreparedRun:
    """What saving ``record`` waits on longest — its JSON, compressed (zlib: some 50 ms for
    the 4 MB record of 64 ranks), and the git state of ``cwd`` (a ``git`` process) — worked
    out in a background thread when ``background``, while the command draws its view:
    zlib and the wait for git leave the interpreter free. :meth:`Store.save` takes it in
    place of doing the same; the record must not change meanwhile (nothing is saved
    until the command is done, so a command that fails saves nothing, as before)."""

    def __init__(self, record: RecordBase, cwd: str, *, background: bool = True,
                 git: tuple[str | None, bool | None] | None = None) -> None:
        self.record, self.cwd = record, cwd
        #: The git state of ``cwd`` when the caller has it already (worked out while it
        #: waited for something else), else asked for here.
        self._git = git
        self._done: tuple[bytes, tuple[str | None, bool | None]] | BaseException | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._work, name="attnprof-store",
                                            daemon=True)
            self._thread.start()
        else:
            self._work()

    def _work(self) -> None:
        try:
            blob = zlib.compress(msgspec.json.encode(self.record), 6)
            self._done = (blob, self._git if self._git is not None else git_state(self.cwd))
        except BaseException as exc:  # raised where the result is asked for
            self._done = exc

    def result(self) -> tuple[bytes, tuple[str | None, bool | None]]:
        """The compressed JSON and ``(commit, dirty)``, once worked out."""
        if self._thread is not None:
            self._thread.join()
        if isinstance(self._done, BaseException):
            raise self._done
        assert self._done is not None
        return self._done
