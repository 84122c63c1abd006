"""``model`` over lists, its flags: ``--seq 64,128 --kv-heads 2,4 --layers 1 --batch 1,2``
runs every combination (:func:`attnprof.commands.model.run_grid`), each through the
executor as a single ``model`` run is, and shows them in one table, the implementations
of each combination ranked or tied by the interleaved rounds'
significance test (:mod:`attnprof.run.model_ranks`).

Each combination is its own model (its own weights and sizes), so implementations are
compared within a combination, never across: a different size is a different question,
and its latency is shown beside the others for the reader to weigh, not ranked.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable

from attnprof.cli.flags import given_flags
from attnprof.errors import UsageError

#: The size flags that take lists, in the order the grid nests them (outermost first).
LIST_FLAGS = ("layers", "kv_heads", "seq", "batch")
#: Combinations past which a grid is refused: each is a model built and measured.
MAX_COMBINATIONS = 64


def int_list(flag: str) -> Callable[[str], list[int]]:
    """An argparse type for ``flag``: ``"64,128"`` -> ``[64, 128]``; a bad entry is one
    line naming it (exit 2)."""

    def parse(text: str) -> list[int]:
        values: list[int] = []
        for part in text.split(","):
            try:
                value = int(part.strip())
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"{part.strip()!r} in {text!r} is not an integer; give one or a "
                    "comma-separated list, e.g. 64,128") from None
            if value < 1:
                raise argparse.ArgumentTypeError(
                    f"{flag} must be a positive integer, got {value}")
            values.append(value)
        return list(dict.fromkeys(values))

    return parse


def combinations(args: argparse.Namespace) -> list[dict[str, int | None]]:
    """Every combination of the list flags (a flag left out is ``None``: the default)."""
    axes = [given_flags(args, (name,)).get(name) or [None] for name in LIST_FLAGS]
    combos = [dict(zip(LIST_FLAGS, values, strict=True)) for values in itertools.product(*axes)]
    if len(combos) > MAX_COMBINATIONS:
        raise UsageError(f"the lists make {len(combos)} model runs; give at most "
                         f"{MAX_COMBINATIONS} (shorten --seq, --batch, --kv-heads or --layers)")
    return combos


def refuse_outputs(args: argparse.Namespace) -> None:
    """A grid has no single record to write: its outputs flags are refused before anything
    runs (run one combination with them instead)."""
    for flag in ("json", "csv", "trace", "html", "plots"):
        if given_flags(args, (flag,)).get(flag) is not None:
            raise UsageError(f"--{flag} writes one model run; with lists of sizes, give one "
                             "value each to write it (the grid's table is printed)")
