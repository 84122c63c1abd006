"""Whether a list of trace files is one distributed run, and which file is which rank.

Each file's rank and world size come from its ``distributedInfo`` (read from the head of
the file, :func:`~attnprof.trace.peek.read_distributed_info`); when a trace has none, from
its name (``rank-3.json.gz``, ``trainer_rank3.pt.trace.json``, ``rank_3``...), and the
record says so. The files are a rank set when there are at least two, every one has a
rank, no rank appears twice and the world sizes they state agree: anything else (the
traces of a comparison, ranks of different jobs, two captures of one rank) is analysed
trace by trace, as before, and :attr:`RankSet.reason` says why it is not a set.

A file whose head cannot be read at all stays in a set that the others make, as a rank
row carrying the error (its rank from the name when the name has one): a corrupt rank
is a row, not the end of the job.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from attnprof.analysis.ranks.naming import ranks_text
from attnprof.errors import UsageError
from attnprof.record.ranks import RankSource
from attnprof.trace.peek import read_distributed_info

__all__ = ["RankFile", "RankSet", "identify_rank_set", "rank_from_name"]

# "rank" as a word of the file name (after a separator or at the start), an optional
# "-"/"_", then the number: rank-0, rank_12, trainer_rank3, RANK7; not "crank3".
_RANK_IN_NAME = re.compile(r"(?:^|[^a-z0-9])rank[-_]?(\d{1,9})(?!\d)", re.IGNORECASE)


def rank_from_name(path: str) -> int | None:
    """The rank a file's name states (the last such word of the name), or None."""
    found = _RANK_IN_NAME.findall(Path(path).name)
    return int(found[-1]) if found else None


@dataclass(frozen=True)
class RankFile:
    """One file of a rank set: its path, rank and where the rank came from."""

    path: str
    rank: int | None
    rank_from: RankSource | None
    world_size: int | None
    backend: str | None = None
    #: Why its head could not be read (the worker will say it again, in full).
    error: str | None = None
    #: Where a worker opens it, when not at ``path`` (an absolute path for a Ray task).
    location: str | None = None


@dataclass(frozen=True)
class RankSet:
    """The outcome of :func:`identify_rank_set`: the files by rank when they are a set
    (``files`` non-empty), else why not (``reason``)."""

    files: tuple[RankFile, ...] = ()
    world_size: int | None = None
    reason: str | None = None
    #: How many readable files stated a rank (when they are no set: whether it looked
    #: like one, worth saying why not).
    ranked: int = 0
    #: Things the set's record should say (ranks told by file name, ...).
    notes: tuple[str, ...] = field(default=())

    @property
    def is_set(self) -> bool:
        return bool(self.files)


def identify_rank_set(paths: list[str]) -> RankSet:
    """Read each file's head and decide whether ``paths`` are one run's ranks."""
    if len(paths) < 2:
        return RankSet(reason="a single trace")
    found = [_identify(p) for p in paths]
    reason = _not_a_set(found)
    if reason is not None:
        return RankSet(reason=reason, ranked=sum(f.rank is not None and f.error is None
                                                 for f in found))
    sizes = {f.world_size for f in found if f.world_size is not None}
    world = sizes.pop() if sizes else None
    named = sorted(f.rank for f in found if f.rank_from == "file name" and f.rank is not None)
    notes: tuple[str, ...] = ()
    if named:
        notes = (f"{ranks_text(named)} told by file name: the trace has no distributedInfo",)
    ordered = sorted(found, key=lambda f: (f.rank is None, f.rank or 0, f.path))
    return RankSet(files=tuple(ordered), world_size=world, notes=notes)


def _not_a_set(found: list[RankFile]) -> str | None:
    """Why the files are not one run's ranks (None when they are)."""
    readable = [f for f in found if f.error is None]
    unranked = [f for f in readable if f.rank is None]
    if unranked:
        return (f"{unranked[0].path} states no rank (no distributedInfo, no rank-N in its "
                "name)")
    if len(readable) < 2:
        return "fewer than two readable traces state a rank"
    by_rank: dict[int, str] = {}
    for f in found:
        if f.rank is None:
            continue
        if f.rank in by_rank:
            return f"rank {f.rank} appears twice ({by_rank[f.rank]}, {f.path})"
        by_rank[f.rank] = f.path
    sizes = sorted({f.world_size for f in found if f.world_size is not None})
    if len(sizes) > 1:
        return f"their world sizes differ ({', '.join(map(str, sizes))})"
    beyond = [f for f in found if sizes and f.rank is not None and f.rank >= sizes[0]]
    if beyond:
        return f"{beyond[0].path} is rank {beyond[0].rank} of a world of {sizes[0]}"
    return None


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return True  # let the reader say what is wrong with it


def _identify(path: str) -> RankFile:
    named = rank_from_name(path)
    by_name: RankSource | None = "file name" if named is not None else None
    if not _regular(path):
        # A pipe (<(zcat rank0.json.gz), /dev/stdin) can be read once only: peeking at its
        # head would take that away from the reader. It states no rank here.
        return RankFile(path=path, rank=None, rank_from=None, world_size=None)
    try:
        info = read_distributed_info(path)
    except UsageError as exc:
        return RankFile(path=path, rank=named, rank_from=by_name, world_size=None,
                        error=str(exc))
    if info is None:
        return RankFile(path=path, rank=named, rank_from=by_name, world_size=None)
    # Negative or zero values are no rank or size at all (torch writes -1 for "unset").
    world = info.world_size if info.world_size is not None and info.world_size > 0 else None
    if info.rank is not None and info.rank >= 0:
        return RankFile(path=path, rank=info.rank, rank_from="distributedInfo",
                        world_size=world, backend=info.backend)
    return RankFile(path=path, rank=named, rank_from=by_name, world_size=world,
                    backend=info.backend)
