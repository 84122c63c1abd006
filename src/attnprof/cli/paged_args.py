"""``--block-size 16,64``: the paged-decode variants at each block size."""

from __future__ import annotations

import argparse

from attnprof.cli.flags import given_flags


def add_block_size_argument(parser: argparse.ArgumentParser) -> None:
    """``--block-size``: block sizes the paged variants run at (one row per size)."""
    parser.add_argument("--block-size", metavar="N[,N...]", default=None,
                        help="KV-cache block sizes for the paged decode variants, one row per "
                             "size (e.g. 16,64; with --mode decode); without --variants, "
                             "compares paged against sdpa over the contiguous cache")


def apply_block_sizes(args: argparse.Namespace) -> None:
    """Expand ``args.variants`` by ``--block-size`` (a bad size is a UsageError, before
    torch is imported)."""
    if given_flags(args, ("block_size",)).get("block_size") is None:
        return
    from attnprof.variants.paged import with_block_sizes
    from attnprof.workload.paged import parse_block_sizes

    sizes = parse_block_sizes(args.block_size)
    # Unnamed, the question is paged against the contiguous cache: SDPA over it.
    named = list(args.variants or ["sdpa"])
    args.variants = with_block_sizes(named, sizes)
