"""``--dropout P`` and ``--autocast bf16|fp16``: attention dropout and mixed precision."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from attnprof.cli.flags import given_flags


def add_precision_arguments(parser: argparse.ArgumentParser) -> None:
    """The two flags (see :mod:`attnprof.run.precision` for what each does to a row)."""
    g = parser.add_argument_group("dropout and precision")
    g.add_argument("--dropout", type=float, metavar="P",
                   help="attention dropout probability in [0, 1) (SDPA variants; accuracy "
                        "is checked at dropout 0, as the output with it is random)")
    g.add_argument("--autocast", metavar="bf16|fp16",
                   help="run the calls under torch.autocast in this dtype, inputs float32 "
                        "(tolerance: the 16-bit dtype's)")


def precision_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The workload fields the two flags set (autocast's inputs are float32 unless the
    user says otherwise, whatever the device's default dtype)."""
    from attnprof.errors import UsageError
    from attnprof.workload.problem import canonical_dtype

    fields = given_flags(args, ("dropout", "autocast"))
    if "autocast" in fields:
        # As records keep dtypes; a bad name is refused, in its own words, by the checks.
        with contextlib.suppress(UsageError):
            fields["autocast"] = canonical_dtype(fields["autocast"])
    if "autocast" in fields and given_flags(args, ("dtype",)).get("dtype") is None:
        fields["dtype"] = "float32"
    return fields
