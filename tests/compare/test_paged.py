"""Paged decode: the same outputs as the contiguous KV cache, and the memory the pool holds.

The paged variants copy the cache into a pool of blocks (scattered by a seeded block
table) and attend through it; at every block size and fill level their output must equal
SDPA's over the contiguous cache, and the row must state the bytes held per cached token.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from attnprof.errors import UsageError
from attnprof.measure.inputs import make_inputs, make_step
from attnprof.run.compare import compare
from attnprof.variants import OPT_IN, REGISTRY, get_variant
from attnprof.variants.paged import _build_flex, with_block_sizes
from attnprof.workload.paged import PagedLayout, parse_block_sizes
from attnprof.workload.problem import Workload

DECODE = Workload(batch=2, heads=4, kv_heads=2, seq=100, head_dim=16, mode="decode")


def _decode_output(build_call: object, workload: Workload) -> torch.Tensor:
    inputs = make_inputs(workload, seed=3)
    with torch.no_grad():
        step = make_step(build_call, inputs, "decode")  # type: ignore[arg-type]
        step()  # first step copies the cache into the pool
        return step()  # type: ignore[return-value]


@pytest.mark.parametrize("cache", [1, 16, 100, 128])  # fill levels of the last block
@pytest.mark.parametrize("block_size", [1, 7, 16, 64])
def test_paged_gather_equals_the_contiguous_cache(block_size: int, cache: int) -> None:
    w = DECODE.replace(seq=cache)
    contiguous = _decode_output(get_variant("sdpa").build(w).call, w)
    paged = _decode_output(get_variant(f"paged@{block_size}").build(w).call, w)
    torch.testing.assert_close(paged, contiguous, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("block_size", [16, 64])
def test_pytorch_paged_attention_equals_the_contiguous_cache(block_size: int) -> None:
    # Uncompiled flex: the same page tables and block mask as paged-flex, without its
    # minute-long CPU compile.
    contiguous = _decode_output(get_variant("sdpa").build(DECODE).call, DECODE)
    paged = _decode_output(_build_flex(DECODE, block_size, compiled=False).call, DECODE)
    torch.testing.assert_close(paged, contiguous, rtol=1e-5, atol=1e-5)


def test_a_new_cache_tensor_is_copied_into_the_pool() -> None:
    built = get_variant("paged@16").build(DECODE)
    sdpa = get_variant("sdpa").build(DECODE)
    for seed in (1, 2):  # the second inputs set must not read the first one's pool
        inputs = make_inputs(DECODE, seed=seed)
        with torch.no_grad():
            got = built.call(inputs.q, inputs.k, inputs.v)
            want = sdpa.call(inputs.q, inputs.k, inputs.v)
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_compare_runs_paged_beside_the_contiguous_cache_and_states_memory_held(
        fast_settings) -> None:
    record = compare(DECODE, ["sdpa", "paged@16", "paged@64"], settings=fast_settings)
    sdpa, p16, p64 = record.results
    for row in (sdpa, p16, p64):
        assert row.status == "ok" and row.within_tolerance, row.reason
    # 100 tokens: 7 blocks of 16 hold 112 slots, 2 blocks of 64 hold 128; a token's K and V
    # over 2 KV heads of 16 float32 is 256 bytes.
    assert any("hold 112 slots for 100 tokens (89.3% full); 287 B held per token vs 256 B"
               in n for n in p16.notes), p16.notes
    assert any("hold 128 slots for 100 tokens (78.1% full); 328 B held per token" in n
               for n in p64.notes), p64.notes


def test_paged_outside_decode_is_unsupported_with_the_reason(fast_settings) -> None:
    (row,) = compare(DECODE.replace(mode="forward"), ["paged"], settings=fast_settings).results
    assert row.status == "unsupported" and "--mode decode" in row.reason


@pytest.mark.parametrize(("cache", "block"), [(1, 16), (15, 16), (16, 16), (17, 16),
                                               (100, 64), (1000, 7)])
def test_layout_counts_match_a_brute_force_pool(cache: int, block: int) -> None:
    layout = PagedLayout.of(DECODE.replace(seq=cache), block)
    blocks, slots = 0, 0
    for _ in range(DECODE.batch):  # allocate block by block, as a pool does
        held = 0
        while held < cache:
            blocks, held = blocks + 1, held + block
        slots += held
    assert layout.blocks == blocks
    assert layout.bytes_held == slots * 2 * 2 * 16 * 4
    assert 0 < layout.fill <= 1
    assert layout.bytes_per_token * DECODE.batch * cache == pytest.approx(layout.bytes_held)


def test_block_sizes_expand_the_named_paged_variants() -> None:
    assert with_block_sizes(["sdpa"], [16, 64]) == ["sdpa", "paged@16", "paged@64"]
    assert with_block_sizes(["paged-flex", "sdpa", "paged@8"], [32]) == [
        "sdpa", "paged-flex@32", "paged@32"]
    assert parse_block_sizes("16, 64,16") == [16, 64]


@pytest.mark.parametrize("text", ["0", "-4", "16,x", "", "1.5"])
def test_bad_block_sizes_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="--block-size"):
        parse_block_sizes(text)


@pytest.mark.parametrize("name", ["paged@0", "paged@x", "paged-flex@-1"])
def test_bad_paged_variant_names_are_usage_errors(name: str) -> None:
    with pytest.raises(UsageError, match="block size"):
        get_variant(name)


def test_a_bad_block_size_is_one_line_and_exit_2_without_torch() -> None:
    probe = ("import sys\nfrom attnprof.cli.main import main\n"
             "print(main(sys.argv[1:]), 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe, "compare", "--mode", "decode",
                           "--block-size", "16,0", "--no-store"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.split() == ["2", "False"], (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line == ("attnprof: error: block size must be an integer in 1..1048576, got 0; "
                    "use e.g. --block-size 16,64")


def test_opt_in_variants_stay_out_of_the_default_set() -> None:
    assert not set(OPT_IN) & set(REGISTRY)
    assert get_variant("paged").name == "paged@16"
