"""A launch's occupancy: CUPTI's estimate where it made one, and the theoretical one.

CUPTI's "est. achieved occupancy %" (written by torch.profiler's kineto) is itself a
calculation: the blocks per SM the occupancy calculator allows, capped by the blocks the
grid gives each SM, times the threads per block, over the SM's threads, truncated to a
whole percent. A grid of one block on 108 SMs reads 0% and means it. But the trace also
writes 0 where no estimate was made:

* for launches through ``cuLaunchKernelEx`` / ``cudaLaunchKernelEx(C)`` (cuDNN's path,
  CUTLASS and Triton cluster launches);
* for every kernel with more than 48 KiB of shared memory per block, whatever the launch
  path (in the public A100 traces: all 1,724 such kernels, cuBLAS/CUTLASS GEMMs through
  ``cudaLaunchKernel`` and ``cudaGraphLaunch`` alike, and none below 48 KiB with a grid
  that fills the GPU): the calculation is made with the default 48 KiB limit, which such
  a kernel (an opt-in size) exceeds;
* wherever the launch's own shape gives 1% or more by that same calculation.

Such a 0 is not a measurement: it becomes absent, with the reason. Beside CUPTI's value,
the theoretical occupancy from the block size, registers and shared memory the trace
records and the architecture's per-SM limits
(:mod:`attnprof.knowledge.sm_limits`) is shown, labelled as computed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import msgspec

from attnprof.formatting import format_bytes
from attnprof.knowledge.sm_limits import Occupancy, limits_for, theoretical_occupancy

__all__ = ["DEFAULT_SHARED_MEMORY", "NO_ESTIMATE_APIS", "LaunchOccupancy", "device_props",
           "launch_occupancy"]

#: Launch APIs through which CUPTI reports no occupancy (cuDNN's path, CUTLASS/Triton with
#: cluster launch): 0 or absent there is a gap in the measurement, not an idle GPU.
NO_ESTIMATE_APIS = ("cuLaunchKernelEx", "cudaLaunchKernelExC", "cudaLaunchKernelEx")
#: Shared memory per block a kernel gets without opting in; the estimate assumes it.
DEFAULT_SHARED_MEMORY = 48 * 1024


class LaunchOccupancy(msgspec.Struct, frozen=True):
    """CUPTI's estimate (``None`` where it made none) and the theoretical occupancy."""

    #: CUPTI's "est. achieved occupancy %", 0..100; ``None``: absent, or a 0 that is no
    #: estimate (``gap`` says why).
    estimate: float | None
    #: The theoretical occupancy, 0..100 (``None``: the trace lacks the launch's shape or
    #: the architecture is not in the table).
    theoretical: float | None
    #: What limits the theoretical occupancy: "registers", "shared memory", "warps",
    #: "blocks".
    limited_by: str | None
    #: Why a 0 the trace wrote is no estimate (``None`` when it is one, or nothing was
    #: written).
    gap: str | None


def device_props(meta_props: tuple[Mapping[str, Any], ...], device: int
                 ) -> Mapping[str, Any] | None:
    """The ``deviceProperties`` entry of ``device`` (the only entry when there is one)."""
    for props in meta_props:
        if props.get("id") == device:
            return props
    return meta_props[0] if len(meta_props) == 1 else None


def launch_occupancy(props: Mapping[str, Any] | None, launch: Mapping[str, Any],
                     api: str | None) -> LaunchOccupancy:
    """Judge one launch's occupancy. ``launch`` holds ``grid``, ``block``,
    ``registers_per_thread``, ``shared_memory`` and ``occupancy`` (CUPTI's, percent), each
    ``None`` when the trace did not write it."""
    grid, block = launch.get("grid"), launch.get("block")
    regs, smem = launch.get("registers_per_thread"), launch.get("shared_memory")
    cupti = launch.get("occupancy")
    limits = limits_for(props) if props is not None else None
    theory: Occupancy | None = None
    if limits is not None and block is not None and regs is not None and smem is not None:
        theory = theoretical_occupancy(limits, math.prod(block), regs, smem)
    theoretical = 100 * theory.share if theory is not None else None
    limited_by = theory.limited_by if theory is not None else None
    if cupti != 0:
        return LaunchOccupancy(cupti, theoretical, limited_by, None)
    gap = _gap(props, grid, block, smem, api, theory)
    return LaunchOccupancy(None if gap else cupti, theoretical, limited_by, gap)


def _gap(props: Mapping[str, Any] | None, grid: list[int] | None, block: list[int] | None,
         smem: int | None, api: str | None, theory: Occupancy | None) -> str | None:
    """Why CUPTI's 0 for this launch is no estimate (``None``: it is one)."""
    if api is not None and api.startswith(NO_ESTIMATE_APIS):
        return (f"occupancy not reported by CUPTI for this launch path ({api}): a measurement "
                "gap, not an idle GPU")
    if smem is not None and smem > DEFAULT_SHARED_MEMORY:
        return (f"occupancy not reported by CUPTI for a kernel with {format_bytes(smem)} of "
                f"shared memory per block (its estimate assumes the default "
                f"{format_bytes(DEFAULT_SHARED_MEMORY)}; it writes 0): a measurement gap, "
                "not an idle GPU")
    expected = _cupti_like(props, grid, block, theory)
    if expected is not None and expected >= 1:
        return (f"occupancy not reported by CUPTI for this launch: it wrote 0 where the "
                f"launch's grid and limits give {expected:.0f}%: a measurement gap")
    return None


def _cupti_like(props: Mapping[str, Any] | None, grid: list[int] | None,
                block: list[int] | None, theory: Occupancy | None) -> float | None:
    """What CUPTI's own calculation gives this launch, percent (``None``: unknown)."""
    if theory is None or props is None or grid is None or block is None:
        return None
    sms, threads = props.get("numSms"), props.get("maxThreadsPerMultiprocessor")
    if not isinstance(sms, int) or not isinstance(threads, int) or sms <= 0 or threads <= 0:
        return None
    blocks = min(float(theory.blocks_per_sm), math.prod(grid) / sms)
    return 100 * blocks * math.prod(block) / threads
