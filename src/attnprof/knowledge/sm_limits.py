"""Per-SM (per-CU) limits of each GPU architecture, and the theoretical occupancy they allow.

A kernel's *theoretical occupancy* is the share of an SM's warp slots its blocks can fill
at once, given the block size, the registers per thread and the shared memory per block
the trace records: the fewest blocks any one resource allows (warps, blocks, registers,
shared memory), times the warps per block, over the SM's warp slots. It is computed, not
measured: CUPTI's "est. achieved occupancy %" is an estimate too (the same calculation,
capped by how many blocks the grid gives each SM), and for some launches it writes 0 where
it made no estimate (:mod:`attnprof.analysis.passes.occupancy`).

The arithmetic is the CUDA Occupancy Calculator's (``cuda_occupancy.h``,
``cudaOccMaxActiveBlocksPerMultiprocessor``):

* registers are allocated per warp, ``registers per thread × 32`` rounded up to
  :attr:`SmLimits.register_unit` (256), and each of the SM's four sub-partitions holds the
  warps whose registers fit in a quarter of the register file;
* shared memory per block is the kernel's plus :attr:`SmLimits.reserved_shared_memory` (1
  KiB the system keeps per block on sm80 and later), rounded up to
  :attr:`SmLimits.shared_memory_unit`, against the largest carveout the SM offers.

The AMD CDNA parts follow the same shape with their own units: a compute unit (CU) of four
SIMDs, 64-lane wavefronts, VGPRs allocated per wave in blocks of 8, LDS for shared memory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import msgspec

__all__ = ["LIMITS", "Occupancy", "SmLimits", "limits_for", "theoretical_occupancy"]


class SmLimits(msgspec.Struct, frozen=True):
    """What one SM (NVIDIA) or CU (AMD) of an architecture holds at once."""

    arch: str
    warp_size: int
    max_warps: int  # resident warps (wavefronts) per SM
    max_blocks: int  # resident blocks (workgroups) per SM
    registers: int  # 32-bit registers per SM (AMD: VGPRs x 64 lanes x 4 SIMDs)
    register_unit: int  # registers a warp is given in multiples of (per warp, all lanes)
    max_registers_per_thread: int
    partitions: int  # sub-partitions (SIMDs) the register file is split across
    shared_memory: int  # bytes per SM blocks may use (the largest carveout)
    shared_memory_unit: int  # bytes a block's shared memory is allocated in multiples of
    reserved_shared_memory: int  # bytes the system keeps per block
    max_threads_per_block: int


_KIB = 1024

# NVIDIA: CUDA C++ Programming Guide, "Compute Capabilities", table "Technical
# Specifications per Compute Capability" (resident blocks, warps and threads per SM, 32-bit
# registers per SM, maximum registers per thread, maximum shared memory per SM and per
# block, the 1 KB reserved per block on 8.x and later), with the allocation units of the
# CUDA Occupancy Calculator (cuda_occupancy.h: register allocation granularity 256 per
# warp, 4 sub-partitions; shared memory granularity 256 bytes on 7.x, 128 bytes on 8.x+).
_NVIDIA = dict(warp_size=32, registers=65536, register_unit=256, max_registers_per_thread=255,
               partitions=4, max_threads_per_block=1024)
LIMITS: dict[str, SmLimits] = {
    # Volta (V100): 96 KB of shared memory per SM, no per-block reservation.
    "sm70": SmLimits(arch="sm70", max_warps=64, max_blocks=32, shared_memory=96 * _KIB,
                     shared_memory_unit=256, reserved_shared_memory=0, **_NVIDIA),
    # Turing (T4): 32 warps, 16 blocks, 64 KB per SM.
    "sm75": SmLimits(arch="sm75", max_warps=32, max_blocks=16, shared_memory=64 * _KIB,
                     shared_memory_unit=256, reserved_shared_memory=0, **_NVIDIA),
    # Ampere (A100): 164 KB of shared memory per SM, 1 KB reserved per block.
    "sm80": SmLimits(arch="sm80", max_warps=64, max_blocks=32, shared_memory=164 * _KIB,
                     shared_memory_unit=128, reserved_shared_memory=_KIB, **_NVIDIA),
    # Ampere (A10, RTX 30): 48 warps, 16 blocks, 100 KB per SM.
    "sm86": SmLimits(arch="sm86", max_warps=48, max_blocks=16, shared_memory=100 * _KIB,
                     shared_memory_unit=128, reserved_shared_memory=_KIB, **_NVIDIA),
    # Ada (L4, L40, RTX 40): 48 warps, 24 blocks, 100 KB per SM.
    "sm89": SmLimits(arch="sm89", max_warps=48, max_blocks=24, shared_memory=100 * _KIB,
                     shared_memory_unit=128, reserved_shared_memory=_KIB, **_NVIDIA),
    # Hopper (H100, H200): 228 KB of shared memory per SM, 1 KB reserved per block.
    "sm90": SmLimits(arch="sm90", max_warps=64, max_blocks=32, shared_memory=228 * _KIB,
                     shared_memory_unit=128, reserved_shared_memory=_KIB, **_NVIDIA),
    # Blackwell (B200, GB200): as Hopper per SM.
    "sm100": SmLimits(arch="sm100", max_warps=64, max_blocks=32, shared_memory=228 * _KIB,
                      shared_memory_unit=128, reserved_shared_memory=_KIB, **_NVIDIA),
}

# AMD CDNA: "AMD Instinct MI200 / CDNA2 Instruction Set Architecture" and "AMD Instinct
# MI300 / CDNA3 Instruction Set Architecture" (a CU of 4 SIMDs, 64-lane wavefronts, 512
# unified VGPRs+AGPRs per lane per SIMD allocated in blocks of 8, 64 KB of LDS per CU
# allocated in 512-byte blocks) and ROCm's "Accelerator and GPU hardware specifications"
# (8 waves per SIMD: 32 per CU); 16 workgroups per CU (the GCN/CDNA workgroup limit).
_CDNA = dict(warp_size=64, max_warps=32, max_blocks=16, registers=4 * 512 * 64,
             register_unit=8 * 64, max_registers_per_thread=512, partitions=4,
             shared_memory=64 * _KIB, shared_memory_unit=512, reserved_shared_memory=0,
             max_threads_per_block=1024)
LIMITS["cdna2"] = SmLimits(arch="cdna2", **_CDNA)  # MI210, MI250, MI250X (gfx90a)
LIMITS["cdna3"] = SmLimits(arch="cdna3", **_CDNA)  # MI300A, MI300X, MI325X (gfx942)

# Compute capability -> table (others, e.g. 8.7 Orin or 12.0, are left out, not guessed).
_ARCH = {(7, 0): "sm70", (7, 5): "sm75", (8, 0): "sm80", (8, 6): "sm86", (8, 9): "sm89",
         (9, 0): "sm90", (10, 0): "sm100"}


def limits_for(props: Mapping[str, Any]) -> SmLimits | None:
    """The limits of the device a trace's ``deviceProperties`` entry describes (``None``
    for an architecture not in :data:`LIMITS`). AMD devices write their gfx version as
    the compute capability (gfx90a: 9.0, gfx942: 9.4) with a 64-wide warp."""
    major, minor = props.get("computeMajor"), props.get("computeMinor")
    if not isinstance(major, int) or not isinstance(minor, int):
        return None
    name = str(props.get("name", ""))
    if props.get("warpSize") == 64 or "AMD" in name or "Radeon" in name or "Instinct" in name:
        return {(9, 0): LIMITS["cdna2"], (9, 4): LIMITS["cdna3"]}.get((major, minor))
    arch = _ARCH.get((major, minor))
    return LIMITS[arch] if arch else None


class Occupancy(msgspec.Struct, frozen=True):
    """The theoretical occupancy of one launch shape on one architecture."""

    blocks_per_sm: int
    warps_per_sm: int
    #: warps_per_sm / the SM's warp slots, 0..1.
    share: float
    #: What allowed no more blocks: "warps", "blocks", "registers" or "shared memory".
    limited_by: str


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def theoretical_occupancy(limits: SmLimits, threads_per_block: int, registers_per_thread: int,
                          shared_memory: int) -> Occupancy | None:
    """The occupancy ``limits`` allow a block of ``threads_per_block`` threads using
    ``registers_per_thread`` registers and ``shared_memory`` bytes (static and dynamic);
    ``None`` when such a block cannot run there at all (a sign the shape or the table is
    not this device's)."""
    if threads_per_block <= 0 or threads_per_block > limits.max_threads_per_block:
        return None
    if registers_per_thread < 0 or registers_per_thread > limits.max_registers_per_thread:
        return None
    warps = math.ceil(threads_per_block / limits.warp_size)
    allowed = {"warps": limits.max_warps // warps, "blocks": limits.max_blocks}
    if registers_per_thread > 0:
        per_warp = _round_up(registers_per_thread * limits.warp_size, limits.register_unit)
        per_partition = limits.registers // limits.partitions // per_warp
        allowed["registers"] = per_partition * limits.partitions // warps
    smem = _round_up(max(shared_memory, 0) + limits.reserved_shared_memory,
                     limits.shared_memory_unit)
    if smem > 0:
        allowed["shared memory"] = limits.shared_memory // smem
    limited_by = min(allowed, key=lambda k: allowed[k])
    blocks = allowed[limited_by]
    if blocks <= 0:
        return None
    return Occupancy(blocks_per_sm=blocks, warps_per_sm=blocks * warps,
                     share=blocks * warps / limits.max_warps, limited_by=limited_by)
