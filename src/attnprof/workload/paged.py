"""What a paged KV cache holds: blocks, token slots and bytes per cached token (no torch).

A paged cache (vLLM's PagedAttention, PyTorch's ``PagedAttention``) keeps K/V in a pool of
fixed-size blocks; each sequence owns ``ceil(cache_len / block_size)`` of them through a
block table, so only its last block is partly filled. The memory a cache *holds* is whole
blocks, which is why bytes held per cached token depend on the block size and on how full
the last block is (the fill level). A contiguous cache sized to the tokens holds exactly
them; one preallocated to a maximum length holds that maximum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnprof.errors import UsageError
from attnprof.workload.problem import Workload

#: Block size of ``paged`` without ``@N`` (vLLM's default on CUDA).
DEFAULT_BLOCK_SIZE = 16


@dataclass(frozen=True)
class PagedLayout:
    """The pool a decode workload's cache takes at ``block_size`` tokens per block."""

    block_size: int
    cache_len: int
    batch: int
    token_bytes: int  # K and V of one token, every KV head: 2 * kv_heads * head_dim * elem

    @classmethod
    def of(cls, workload: Workload, block_size: int) -> PagedLayout:
        """The layout of ``workload``'s KV cache (``k_len`` tokens per sequence)."""
        check_block_size(block_size)
        token = 2 * workload.num_kv_heads * workload.head_dim * workload.element_bytes
        return cls(block_size, workload.k_len, workload.batch, token)

    @property
    def blocks_per_seq(self) -> int:
        return math.ceil(self.cache_len / self.block_size)

    @property
    def blocks(self) -> int:
        """Blocks the whole batch holds in the pool."""
        return self.batch * self.blocks_per_seq

    @property
    def slots_per_seq(self) -> int:
        """Token slots one sequence holds (whole blocks)."""
        return self.blocks_per_seq * self.block_size

    @property
    def fill(self) -> float:
        """Share of held slots that hold a token, in (0, 1]."""
        return self.cache_len / self.slots_per_seq

    @property
    def bytes_held(self) -> int:
        """K/V bytes the pool holds for the batch, partly filled last blocks included."""
        return self.blocks * self.block_size * self.token_bytes

    @property
    def bytes_per_token(self) -> float:
        """Bytes held per cached token (``token_bytes`` when every block is full)."""
        return self.bytes_held / (self.batch * self.cache_len)

    def describe(self) -> str:
        """One note: blocks, fill, and bytes held per token against a contiguous cache."""
        waste = self.bytes_per_token / self.token_bytes - 1
        return (f"paged KV: {self.blocks_per_seq} blocks of {self.block_size} per sequence "
                f"hold {self.slots_per_seq} slots for {self.cache_len} tokens "
                f"({self.fill:.1%} full); {self.bytes_per_token:,.0f} B held per token vs "
                f"{self.token_bytes:,} B contiguous (+{waste:.1%})")


def check_block_size(block_size: object) -> int:
    """``block_size`` if it is a positive integer, else a :class:`UsageError`."""
    if not isinstance(block_size, int) or isinstance(block_size, bool) or not (
            0 < block_size <= 1 << 20):
        raise UsageError(f"block size must be an integer in 1..{1 << 20}, got {block_size!r}; "
                         "use e.g. --block-size 16,64")
    return block_size


def parse_block_sizes(text: str) -> list[int]:
    """``"16,64"`` -> ``[16, 64]``; a bad entry is a :class:`UsageError` naming it."""
    sizes: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            value = int(part)
        except ValueError:
            raise UsageError(f"--block-size {text!r}: {part!r} is not an integer; "
                             "use e.g. --block-size 16,64") from None
        sizes.append(check_block_size(value))
    if not sizes:
        raise UsageError("--block-size is empty; use e.g. --block-size 16,64")
    return list(dict.fromkeys(sizes))
