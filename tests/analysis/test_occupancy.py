"""Occupancy (issue 31, item 1): CUPTI's 0 that is no estimate shows as "—" with the reason,
and the theoretical occupancy, computed from the launch's shape and the architecture's
per-SM limits, matches a hand computation.

The hand computations follow the CUDA Occupancy Calculator: registers per warp = registers
per thread x 32 rounded up to 256; each of 4 sub-partitions holds floor(16384 / that)
warps; shared memory per block = the kernel's + the reserved (1 KiB on sm80+), rounded up
to 128 B (256 B on sm70/75), against the SM's largest carveout; blocks per SM = the least
any resource allows; occupancy = blocks x warps per block / the SM's warp slots.
"""

from __future__ import annotations

from typing import Any

import pytest

A100_TRACES = ["a100_training_rank0.json.gz", "a100_nccl.json.gz",
               "a100_alexnet_inference.json.gz", "a100_trace_control.json.gz"]


@pytest.mark.parametrize(("arch", "threads", "regs", "smem", "blocks", "share", "limit"), [
    # The example, an A100 training GEMM (a100_training_rank0): 248 regs x 32 =
    # 7936 (31 x 256); 16384 // 7936 = 2 warps per sub-partition, 8 per SM, 4 per block
    # -> 2 blocks. Shared memory 80 KiB + 1 KiB = 82944 B; 167936 // 82944 = 2 blocks.
    # 2 blocks x 4 warps = 8 of 64 warps: 12.5%.
    ("sm80", 128, 248, 80 * 1024, 2, 8 / 64, "registers"),
    # Register granularity: 33 regs x 32 = 1056, rounded up to 1280; 16384 // 1280 = 12
    # warps per sub-partition, 48 per SM, 4 per block -> 12 blocks (warps allow 16):
    # 48 of 64 warps, 75%. Without the rounding it would be 15 blocks.
    ("sm80", 128, 33, 0, 12, 48 / 64, "registers"),
    # Reserved shared memory: 41 KiB + 1 KiB = 43008 B; 167936 // 43008 = 3 blocks (4
    # without the reserved KiB); 32 regs allow 16 blocks. 3 x 4 warps = 12 of 64: 18.75%.
    ("sm80", 128, 32, 41 * 1024, 3, 12 / 64, "shared memory"),
    # V100: 256 threads (8 warps) x 64 regs: 2048 regs per warp; 16384 // 2048 = 8 warps
    # per sub-partition, 32 per SM -> 4 blocks; no shared memory. 32 of 64 warps: 50%.
    ("sm70", 256, 64, 0, 4, 32 / 64, "registers"),
    # A10 (sm86, 48 warp slots, 100 KiB): 48 KiB + 1 KiB = 50176 B; 102400 // 50176 = 2
    # blocks of 4 warps: 8 of 48 warps, 16.7%.
    ("sm86", 128, 32, 48 * 1024, 2, 8 / 48, "shared memory"),
    # H100, a FlashAttention-3-like block: 384 threads (12 warps) x 168 regs = 5376 per
    # warp (21 x 256); 16384 // 5376 = 3 per sub-partition, 12 per SM -> 1 block; 200 KiB
    # + 1 KiB of 228 KiB -> 1 block. 12 of 64 warps: 18.75%.
    ("sm90", 384, 168, 200 * 1024, 1, 12 / 64, "registers"),
    # T4 (sm75, 32 warp slots): one 1024-thread block fills them: 100%.
    ("sm75", 1024, 16, 0, 1, 1.0, "warps"),
    # MI250 (CDNA2): 256 threads = 4 waves of 64; 128 VGPRs x 64 lanes = 8192 per wave
    # (16 x 512); 32768 per SIMD -> 4 waves, 16 per CU -> 4 workgroups; 16 KiB of 64 KiB
    # LDS -> 4. 4 x 4 = 16 of 32 waves: 50%.
    ("cdna2", 256, 128, 16 * 1024, 4, 16 / 32, "registers"),
])
def test_theoretical_occupancy_matches_the_hand_computation(
        arch: str, threads: int, regs: int, smem: int, blocks: int, share: float,
        limit: str) -> None:
    from attnprof.knowledge.sm_limits import LIMITS, theoretical_occupancy

    occ = theoretical_occupancy(LIMITS[arch], threads, regs, smem)
    assert occ is not None
    assert (occ.blocks_per_sm, occ.share, occ.limited_by) == (blocks, pytest.approx(share),
                                                             limit)


def test_limits_cover_the_architectures_of_our_traces() -> None:
    from attnprof.knowledge.sm_limits import LIMITS, limits_for

    assert {"sm70", "sm75", "sm80", "sm86", "sm89", "sm90", "sm100", "cdna2", "cdna3"} <= set(
        LIMITS)
    assert limits_for({"computeMajor": 8, "computeMinor": 0, "warpSize": 32}) is LIMITS["sm80"]
    # MI250's properties say 9.0, as an H100's do: the 64-wide warp tells them apart.
    mi250 = {"name": "AMD Radeon Graphics", "computeMajor": 9, "computeMinor": 0,
             "warpSize": 64}
    assert limits_for(mi250) is LIMITS["cdna2"]
    assert limits_for({"computeMajor": 12, "computeMinor": 0}) is None  # not guessed


@pytest.mark.parametrize("name", A100_TRACES)
def test_no_graph_launched_or_large_smem_kernel_shows_zero(name: str, load_public: Any) -> None:
    _, report = load_public(name)
    kernels = [k for r in report.regions for k in r.kernels if k.category == "compute"]
    for k in kernels:
        assert k.occupancy_text() != "0%", k.name
        if k.shared_memory is not None and k.shared_memory > 48 * 1024:
            # CUPTI wrote 0 for every such kernel: no estimate, said so.
            assert k.occupancy is None and k.note and "not reported by CUPTI" in k.note
        if k.registers_per_thread is not None:
            assert k.theoretical_occupancy is not None and 0 < k.theoretical_occupancy <= 100
    graph = [k for k in kernels if k.launch_api == "cudaGraphLaunch"]
    if name == "a100_training_rank0.json.gz":
        assert graph
        # The GEMM: 248 regs x 128 threads, 80 KiB: 12.5%, CUPTI's 0 absent.
        gemm = next(k for k in graph if k.registers_per_thread == 248
                    and k.shared_memory == 80 * 1024 and k.block == [128, 1, 1])
        assert gemm.occupancy is None
        assert gemm.theoretical_occupancy == pytest.approx(12.5)
        assert gemm.theoretical_text() == "12.5% (registers)"


def test_a_tiny_grid_zero_is_an_estimate_under_one_percent(load_public: Any) -> None:
    # One block of 128 threads on 108 SMs: CUPTI's estimate is 0.06%, written as a
    # truncated 0; it is a measurement, shown as under 1%.
    _, report = load_public("a100_training_rank0.json.gz")
    tiny = [k for r in report.regions for k in r.kernels
            if k.grid == [1, 1, 1] and k.shared_memory == 0 and k.occupancy == 0]
    assert tiny
    assert all(k.occupancy_text() == "<1%" and not k.note for k in tiny)
