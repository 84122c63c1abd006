"""How a group of ranks is written in notes and findings: ``rank 3``, ``ranks 0, 1``,
``ranks 2-127`` (runs of three or more consecutive ranks as a range)."""

from __future__ import annotations

__all__ = ["missing_ranks_text", "ranks_text"]


def ranks_text(ranks: list[int] | set[int] | tuple[int, ...]) -> str:
    """``rank 3`` / ``ranks 0, 1, 5`` / ``ranks 0-3, 7``, in order, each rank once."""
    ordered = sorted(set(ranks))
    if len(ordered) == 1:
        return f"rank {ordered[0]}"
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ordered[i]}-{ordered[j]}")
        else:
            parts.extend(str(r) for r in ordered[i:j + 1])
        i = j + 1
    return "ranks " + ", ".join(parts)


def missing_ranks_text(present: set[int], world_size: int) -> str:
    """The ranks of ``range(world_size)`` not in ``present``, written as :func:`ranks_text`
    writes them, in time proportional to the ranks present (a world may be millions)."""
    runs: list[tuple[int, int]] = []  # inclusive gaps between the ranks present
    start = 0
    for rank in sorted(r for r in present if 0 <= r < world_size):
        if rank > start:
            runs.append((start, rank - 1))
        start = rank + 1
    if start < world_size:
        runs.append((start, world_size - 1))
    parts = [str(a) if a == b else f"{a}, {b}" if b == a + 1 else f"{a}-{b}" for a, b in runs]
    single = len(runs) == 1 and runs[0][0] == runs[0][1]
    return ("rank " if single else "ranks ") + ", ".join(parts)
