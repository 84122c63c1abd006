"""Paged decode: the KV cache in a pool of fixed-size blocks, read through a block table.

Two ways to attend over a paged cache, each at any block size (``paged@64``):

* ``paged``: gather the sequence's blocks into a contiguous view, then SDPA (what a model
  without a paged kernel does; the gather is a copy of the whole cache every step);
* ``paged-flex``: PyTorch's own ``torch.nn.attention.experimental.PagedAttention`` with
  ``torch.compile(flex_attention)``: the block mask maps logical to physical blocks, so the
  kernel reads the pool in place.

The pool and block table are built once per workload (blocks assigned in a seeded random
order, as a pool looks after other sequences came and went). The cache's contents are
copied into the pool the first time a cache tensor is seen; each measured step then writes
the new token into its block, as a paged decode step appends, and attends. The row's note
states what the pool holds per token (:class:`attnprof.workload.paged.PagedLayout`); outputs
are checked against the same float64 reference as the contiguous cache.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from attnprof.errors import UsageError
from attnprof.variants.base import SUPPORTED, Built, Support, Variant
from attnprof.workload.paged import DEFAULT_BLOCK_SIZE, PagedLayout, check_block_size
from attnprof.workload.problem import Workload

if TYPE_CHECKING:
    import torch

FAMILY = "paged"
_KINDS = ("paged", "paged-flex")


def _supports(workload: Workload) -> Support:
    if workload.mode != "decode":
        return Support(False, "a paged KV cache is read at decode; use --mode decode")
    return SUPPORTED


def _block_table(layout: PagedLayout, device: str) -> torch.Tensor:
    """[batch, blocks_per_seq] physical block ids, a seeded permutation of the pool."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(0)
    order = torch.randperm(layout.blocks, generator=gen)
    return order.view(layout.batch, layout.blocks_per_seq).to(device)


def _fresh(seen: dict[str, object], k: torch.Tensor) -> bool:
    """Whether ``k`` is a cache tensor the pool has not yet copied (a new inputs set)."""
    key = (k.data_ptr(), tuple(k.shape))
    if seen.get("key") == key:
        return False
    seen["key"] = key
    return True


def _build_gather(workload: Workload, block_size: int) -> Built:
    import torch
    import torch.nn.functional as F

    layout = PagedLayout.of(workload, block_size)
    b, hk, d, n = workload.batch, workload.num_kv_heads, workload.head_dim, workload.k_len
    nb, bs = layout.blocks_per_seq, block_size
    dtype, device = getattr(torch, workload.dtype), workload.device
    table = _block_table(layout, device)
    last_block, last_slot = table[:, -1], (n - 1) % bs
    pool_k = torch.zeros(layout.blocks, hk, bs, d, dtype=dtype, device=device)
    pool_v = torch.zeros_like(pool_k)
    gqa = workload.groups > 1
    seen: dict[str, object] = {}

    def blocks(t: torch.Tensor) -> torch.Tensor:  # [b, hk, n, d] -> [b, nb, hk, bs, d]
        padded = F.pad(t, (0, 0, 0, nb * bs - n))
        return padded.view(b, hk, nb, bs, d).transpose(1, 2)

    def gather(pool: torch.Tensor) -> torch.Tensor:  # -> [b, hk, n, d], a copy
        return pool[table].transpose(1, 2).reshape(b, hk, nb * bs, d)[:, :, :n]

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if _fresh(seen, k):
            pool_k[table], pool_v[table] = blocks(k), blocks(v)
        pool_k[last_block, :, last_slot] = k[:, :, -1]  # the step's new token
        pool_v[last_block, :, last_slot] = v[:, :, -1]
        return F.scaled_dot_product_attention(q, gather(pool_k), gather(pool_v),
                                              enable_gqa=gqa)

    return Built(call=call, notes=(layout.describe(),
                                   "blocks gathered into a contiguous copy every step"))


def _build_flex(workload: Workload, block_size: int, compiled: bool = True) -> Built:
    import torch
    from torch.nn.attention.experimental._paged_attention import PagedAttention
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention, noop_mask

    layout = PagedLayout.of(workload, block_size)
    b, hk, d, n = workload.batch, workload.num_kv_heads, workload.head_dim, workload.k_len
    dtype, device = getattr(torch, workload.dtype), workload.device
    paged = PagedAttention(layout.blocks, block_size, b, device=device)
    # Hand out pages in the same scattered order as ``paged``'s block table.
    paged.empty_pages = _block_table(layout, "cpu").flatten().flip(0).tolist()
    for i in range(b):
        paged.reserve(torch.tensor(i, device=device), torch.tensor(n, device=device))
    k_cache = torch.zeros(1, hk, layout.blocks * block_size, d, dtype=dtype, device=device)
    v_cache = torch.zeros_like(k_cache)
    batch_idx = torch.arange(b, device=device)
    every = torch.arange(n, device=device).expand(b, n)
    last = torch.full((b, 1), n - 1, device=device)
    logical = create_block_mask(noop_mask, b, None, 1, layout.slots_per_seq, device=device,
                                BLOCK_SIZE=block_size)
    block_mask = paged.convert_logical_block_mask(
        logical, kv_len=torch.full((b,), n, device=device))
    fn = torch.compile(flex_attention, dynamic=False) if compiled else flex_attention
    gqa = workload.groups > 1
    seen: dict[str, object] = {}

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if _fresh(seen, k):
            paged.assign(batch_idx, every, k, v, k_cache, v_cache)
        paged.assign(batch_idx, last, k[:, :, -1:], v[:, :, -1:], k_cache, v_cache)
        return fn(q, k_cache, v_cache, block_mask=block_mask, enable_gqa=gqa)

    notes = [layout.describe(), "PyTorch's experimental PagedAttention over flex_attention"]
    if not compiled:
        notes.append("not compiled: materialises scores over the whole pool")
    return Built(call=call, notes=tuple(notes))


_BUILDERS = {"paged": _build_gather, "paged-flex": _build_flex}
_SUMMARIES = {
    "paged": "paged KV cache: blocks gathered by a block table, then SDPA",
    "paged-flex": "paged KV cache read in place: PyTorch PagedAttention + compiled flex",
}


@functools.cache
def paged_variant(kind: str, block_size: int = DEFAULT_BLOCK_SIZE) -> Variant:
    """The ``kind`` paged variant at ``block_size``, named ``kind@block_size`` so a row says
    its block size (``paged`` alone means ``paged@16``)."""
    check_block_size(block_size)
    name = f"{kind}@{block_size}"
    build: object = functools.partial(_BUILDERS[kind], block_size=block_size)
    return Variant(name=name, family=FAMILY,
                   summary=f"{_SUMMARIES[kind]} ({block_size}-token blocks)",
                   build=build,  # type: ignore[arg-type]
                   supports=_supports, compiled=kind == "paged-flex")


def is_paged_name(name: str) -> bool:
    """Whether ``name`` names a paged variant (``paged``, ``paged-flex@64``)."""
    return name.partition("@")[0] in _KINDS


def paged_from_name(name: str) -> Variant:
    """The variant ``paged[@N]`` or ``paged-flex[@N]`` names; a bad ``N`` is a UsageError."""
    kind, at, size = name.partition("@")
    if not at:
        return paged_variant(kind)
    try:
        block_size = int(size)
    except ValueError:
        raise UsageError(f"variant {name!r}: block size {size!r} is not an integer; "
                         f"use e.g. {kind}@64") from None
    return paged_variant(kind, check_block_size(block_size))


def with_block_sizes(names: list[str], sizes: list[int]) -> list[str]:
    """``names`` with each paged variant repeated at every size of ``--block-size`` (the
    gather variant alone when no paged variant is named)."""
    kinds = [n.partition("@")[0] for n in names if is_paged_name(n)] or ["paged"]
    rest = [n for n in names if not is_paged_name(n)]
    expanded = [f"{kind}@{size}" for kind in dict.fromkeys(kinds) for size in sizes]
    return rest + expanded


PAGED = paged_variant("paged")
PAGED_FLEX = paged_variant("paged-flex")

__all__ = ["PAGED", "PAGED_FLEX", "is_paged_name", "paged_from_name",
           "paged_variant", "with_block_sizes"]
