"""The host allocator's state while CPU variants run, and the page faults they cause.

PyTorch's CPU tensors come from the C library's ``malloc``. glibc serves an allocation
above its *mmap threshold* with fresh pages from the kernel (each first touched page a
page fault, zeroed), and returns them on ``free``; below it, from its heap, where freed
memory is reused. The threshold moves by itself: freeing an mmap'd block raises it to that
block's size (up to 32 MiB). So a variant that allocates tens of MiB per call runs either
on reused heap or on fresh pages, depending on what the process happened to do before —
six identical runs of ``compare --variants sdpa-math,naive`` measured sdpa-math at
11 to 24 ms, and the ratio to naive at 1.15 to 2.2, each run's spread looking tight.

attnprof therefore sets the state before anything is measured (``Settings.cpu_allocator``):

* ``reuse`` (default): no large block is mmap'd (``M_MMAP_MAX`` 0) and freed memory is never
  trimmed back to the kernel (``M_TRIM_THRESHOLD`` at its maximum), so after the warm-up
  every call reuses memory the process already holds — as CUDA's caching allocator does,
  and as a long-running server or training loop sees. The comparison gives the memory back
  (:func:`release_free_memory`) once each variant is finished, as it empties CUDA's cache,
  so one variant's heap is not held against the next. Before the timing rounds it settles
  the heap (:func:`settle_heap`): the variants' allocations then alternate, which needs
  more room than each one's warm-up did alone, and the heap's free memory may hold pages
  given back before (a failed variant's); settling grows the heap by as much as the
  warm-ups did and faults all of it in once, so that the rounds never do. (Unsettled,
  naive took 448-1,063 page faults per call in the rounds, varying between processes:
  16 MiB faulted in on a few calls.)
* ``fresh``: every allocation of 128 KiB or more is mmap'd (a fixed threshold, no drift)
  and returned on free, so each call pays first-touch page faults and zeroing — the cost
  a process with cold memory pays.
* ``system``: leave malloc as the process found it (its ``MALLOC_*`` environment, or
  jemalloc/tcmalloc loaded with ``LD_PRELOAD``); its state then depends on its history.

``mallopt`` is glibc's; elsewhere (musl, macOS, Windows) the state cannot be set, and
:func:`set_cpu_allocator` says so. The settings stay for the life of the process.
Minor page faults (:func:`minor_faults`) are counted around every variant's samples, so
first-touch cost shows beside each row whatever the state.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

from attnprof.workload.settings import CpuAllocator

__all__ = ["heap_bytes", "minor_faults", "page_size", "release_free_memory", "reserve_heap",
           "set_cpu_allocator", "settle_heap"]

# mallopt parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
#: glibc's defaults: mmap up to 65,536 blocks at once, above 128 KiB.
_DEFAULT_MMAP_MAX = 65536
_FRESH_THRESHOLD = 128 * 1024
#: mallopt takes a C int: the largest trim threshold it can be given.
_NEVER_TRIM = 2**31 - 1

#: The mallopt calls that make each state, in order.
_STATES: dict[str, tuple[tuple[int, int], ...]] = {
    "reuse": ((_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, _NEVER_TRIM)),
    "fresh": ((_M_MMAP_MAX, _DEFAULT_MMAP_MAX), (_M_MMAP_THRESHOLD, _FRESH_THRESHOLD),
              (_M_TRIM_THRESHOLD, _FRESH_THRESHOLD)),
}


#: The state :func:`set_cpu_allocator` last applied (``None``: as the process found it).
_state: str | None = None


def set_cpu_allocator(state: CpuAllocator) -> str | None:
    """Put glibc malloc in ``state`` for the rest of the process; ``None`` when done (or
    ``system``, which asks for nothing), else why it could not be."""
    calls = _STATES.get(state)
    if calls is None:
        return None
    mallopt = _mallopt()
    if mallopt is None:
        return (f"--cpu-allocator {state} not applied: this C library has no glibc mallopt; "
                "the allocator is as the process found it")
    for param, value in calls:
        if mallopt(param, value) != 1:
            return f"--cpu-allocator {state} not applied: mallopt({param}, {value}) refused"
    global _state
    _state = state
    return None


def release_free_memory() -> None:
    """Give the kernel back the memory malloc holds free (``malloc_trim``): after the
    ceilings' large buffers, so that ``reuse`` keeps what the variants use, not those."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def reserve_heap(nbytes: int) -> bool:
    """Grow malloc's heap by ``nbytes`` of touched, free memory; ``True`` when done.

    In the ``reuse`` state nothing large is mmap'd and nothing freed is trimmed, so a block
    allocated, written and freed here stays in the heap as free memory whose pages are
    already in place. A profiler session then finds room for the allocations its event
    buffers push out of their usual blocks without faulting fresh pages — faults an
    untraced step never pays (:mod:`attnprof.knowledge.capture_noise`). In other states
    the block would go back to the kernel on free, so it is not attempted.
    """
    libc = _glibc()
    # Never more than a quarter of the memory free now: the reserve stays with the process
    # (nothing is trimmed), and must not push it into swap or the OOM killer.
    nbytes = min(nbytes, _free_bytes() // 4)
    if libc is None or nbytes <= 0 or _state != "reuse":
        return False
    block = libc.malloc(nbytes)
    if not block:
        return False
    ctypes.memset(block, 0, nbytes)
    libc.free(block)
    return True


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def heap_bytes() -> int | None:
    """The size of malloc's main heap, bytes (glibc's ``mallinfo2``; ``None`` where there
    is none)."""
    libc = _glibc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        return None
    return int(libc.mallinfo2().arena)


#: madvise(2): fault in a range's pages, writable, leaving their contents (Linux 5.14).
_MADV_POPULATE_WRITE = 23


def settle_heap(grow_by: int) -> int:
    """In the ``reuse`` state, grow the heap by ``grow_by`` bytes of free memory and make
    every page of it resident; the bytes the heap spans then (0 when nothing was done).

    Free memory the heap holds may have been given back to the kernel (a trim after a
    failed variant), so the next allocation that lands there pays a page fault per page;
    and variants whose calls alternate need more room than each one's warm-up alone, which
    the heap finds by growing into fresh pages. Both would fault in the timing rounds, on a
    few calls, differently in every process. The heap is grown by ``grow_by`` bytes at its
    top (:func:`_grow_top`), then faulted in whole with ``MADV_POPULATE_WRITE``, which
    leaves every byte as it is. Nothing outside ``reuse``, where the heap is never trimmed; not
    when the free memory to fault in exceeds a quarter of the physical memory free now (or
    of the address space a capped worker has left, for the growth).
    """
    libc = _glibc()
    if libc is None or _state != "reuse" or not hasattr(libc, "mallinfo2"):
        return 0
    budget = _free_bytes() // 4
    left = _address_space_left()
    if left is not None:
        grow_by = min(grow_by, left // 4)
    if 0 < grow_by <= budget:
        _grow_top(libc, grow_by)
    info = libc.mallinfo2()
    span = _heap_span()
    if span is None or int(info.fordblks) > budget:
        return 0
    start, end = span
    if libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start),
                    _MADV_POPULATE_WRITE) != 0:
        return 0  # an older kernel: the rounds fault in what they need, as before
    return end - start


#: Blocks held at most while growing the heap (each one that lands in a free block of the
#: heap instead of its top takes that block out of the way of the next).
_GROW_TRIES = 64


def _grow_top(libc: Any, grow_by: int) -> None:
    """Grow the heap by ``grow_by`` free bytes at its top: blocks one ``grow_by`` larger
    than the free top are held until one has to extend the heap (a smaller free block
    elsewhere would take it first), then all are given back — to the heap, never to the
    kernel, in the ``reuse`` state."""
    target = int(libc.mallinfo2().arena) + grow_by
    held = []
    try:
        for _ in range(_GROW_TRIES):
            info = libc.mallinfo2()
            if int(info.arena) >= target:
                break
            block = libc.malloc(int(info.keepcost) + target - int(info.arena))
            if not block:
                break
            held.append(block)
    finally:
        for block in held:
            libc.free(block)


def _address_space_left() -> int | None:
    """Bytes this process may still map under its address-space limit (``RLIMIT_AS``, as
    a worker with a memory cap has), or ``None`` when there is no limit."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/status", encoding="ascii") as fh:
            mapped = next(int(line.split()[1]) * 1024 for line in fh
                          if line.startswith("VmSize:"))
    except (ImportError, OSError, StopIteration, ValueError):
        return None
    return max(0, soft - mapped)


def _heap_span() -> tuple[int, int] | None:
    """The address range of the process's ``[heap]`` (malloc's main arena), if any."""
    try:
        with open("/proc/self/maps", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.rstrip().endswith("[heap]"):
                    low, _, high = line.split()[0].partition("-")
                    return int(low, 16), int(high, 16)
    except OSError:
        pass
    return None


def _free_bytes() -> int:
    """Physical memory free now, bytes (0 where the platform does not say)."""
    import os

    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * page_size()
    except (ValueError, OSError, AttributeError):
        return 0


def page_size() -> int:
    """The size of a memory page, bytes (what a page fault brings in)."""
    import mmap

    return mmap.PAGESIZE


@functools.lru_cache(maxsize=1)
def _glibc() -> Any:
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - only glibc's mallopt takes these parameters
        libc.mallopt.argtypes, libc.mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = (ctypes.c_size_t,), ctypes.c_int
        libc.malloc.argtypes, libc.malloc.restype = (ctypes.c_size_t,), ctypes.c_void_p
        libc.free.argtypes, libc.free.restype = (ctypes.c_void_p,), None
        if hasattr(libc, "mallinfo2"):
            libc.mallinfo2.argtypes, libc.mallinfo2.restype = (), _MallInfo2
        libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        libc.madvise.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


def _mallopt() -> Any:
    libc = _glibc()
    return None if libc is None else libc.mallopt


def minor_faults() -> int | None:
    """Minor page faults of this process so far, all threads (``None`` where the platform
    does not count them)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)
