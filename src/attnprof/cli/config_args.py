"""``--from-config DIR``: a workload's heads, K/V heads, head dim and window from a
transformers config.json, its maximum positions a limit on ``--seq``."""

from __future__ import annotations

import argparse

from attnprof.cli.flags import given_flags


def add_from_config_argument(parser: argparse.ArgumentParser) -> None:
    """The flag; the sizes it reads fill only the flags left out."""
    parser.add_argument("--from-config", metavar="DIR",
                        help="take heads, KV heads, head dim and sliding window from DIR's "
                             "transformers config.json (flags given win; --seq may not pass "
                             "its max positions; nothing is downloaded)")


def apply_from_config(args: argparse.Namespace, *, text: bool) -> None:
    """Fill ``args``'s unset size flags from ``--from-config`` (as text for the grid
    commands, whose flags are lists), and refuse a ``--seq`` beyond the max positions."""
    folder = given_flags(args, ("from_config",)).get("from_config")
    if folder is None:
        return
    from attnprof.errors import UsageError
    from attnprof.workload.grid import parse_axis
    from attnprof.workload.model_config import read_config_sizes

    sizes = read_config_sizes(folder)
    for field, value in sizes.fields().items():
        if given_flags(args, (field,)).get(field) is None:
            setattr(args, field, str(value) if text else value)
    limit = sizes.max_positions
    for field in ("seq", "kv_seq"):
        given = given_flags(args, (field,)).get(field)
        if limit is None or given is None:
            continue
        values = parse_axis(field, given) if isinstance(given, str) else (given,)
        over = [v for v in values if v > limit]
        if over:
            flag = "--" + field.replace("_", "-")
            raise UsageError(f"{flag} {over[0]} is beyond the {limit} positions of "
                             f"--from-config {folder!r}; use {flag} {limit} or less")
