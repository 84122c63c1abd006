"""What "fits in memory" means, once, for every command that judges it.

A variant fits a memory size at a shape when one step of it ran (``ok``) and that step's
measured peak memory is at most the size. The peak is the figure ``compare`` and ``sweep``
show and ``--budgets`` (``peak_memory_mib``) checks: the bytes the step's own tensors hold
at once — on a CPU the running sum of the profiler's allocation events, on CUDA the caching
allocator's peak over the step — without the inputs (q, k, v and, in training, the output's
gradient), which are the caller's. ``limits`` searches for the largest size that fits and
``recommend --max-memory`` keeps the variants that fit, both by this definition, so a
ceiling ``limits`` reports is one ``compare`` confirms at that size and refutes one step
above it.

A worker's address-space cap is not this measure (it counts the allocator's and threads'
overhead too): the commands that judge fits run their steps under a cap well above the
size (:func:`safety_cap`), only so that a step far beyond it fails in its worker instead of
waking the kernel's OOM killer.
"""

from __future__ import annotations

from attnprof.formatting import format_bytes
from attnprof.record.compare import VariantResult

__all__ = ["DEFINITION", "fits", "over", "safety_cap"]

#: The definition in one line, for tables and help texts.
DEFINITION = ("fits: one step ran and its measured peak memory (the step's own tensors, "
              "inputs excluded — the figure compare shows) is within the size")


def fits(row: VariantResult, size_bytes: int) -> bool:
    """Whether ``row`` ran and its step's peak memory is at most ``size_bytes``."""
    return row.status == "ok" and row.peak_memory_bytes is not None \
        and row.peak_memory_bytes <= size_bytes


def over(row: VariantResult, size_bytes: int) -> str | None:
    """Why a row that ran does not fit ``size_bytes``, or ``None`` when it fits (or did not
    run: its status says why)."""
    if row.status != "ok":
        return None
    if row.peak_memory_bytes is None:
        return "its peak memory was not measured"
    if row.peak_memory_bytes > size_bytes:
        return f"peak memory {format_bytes(row.peak_memory_bytes)} > {format_bytes(size_bytes)}"
    return None


def safety_cap(size_bytes: int) -> int:
    """The memory cap of a worker whose steps are judged against ``size_bytes``: twice the
    size, and at least 256 MiB above it — room for the allocator's and threads' overhead,
    so the cap never decides what the measured peak decides."""
    return size_bytes + max(size_bytes, 256 << 20)
