"""``--price USD_PER_HOUR`` and ``--prices FILE`` (or ``ATTNPROF_PRICES``): read and
checked before anything is measured, into a :class:`~attnprof.commands.pricing.
PriceRequest` the command matches to the machine once the record says which it is."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from attnprof.cli.flags import given_flags

if TYPE_CHECKING:
    from attnprof.commands.pricing import PriceRequest

__all__ = ["add_objective_argument", "add_price_arguments", "objective_price", "price_request",
           "say_unpriced"]


def add_price_arguments(p: Any) -> None:
    """``--price`` and ``--prices``."""
    p.add_argument("--price", metavar="USD_PER_HOUR",
                   help="what an hour of this machine costs: each ok row then shows its cost "
                        "per call and per million tokens, kept in the record")
    p.add_argument("--prices", metavar="FILE",
                   help="a prices file (TOML: [prices] device-name-or-kind = USD per hour); "
                        "default: the file ATTNPROF_PRICES names, if set")


def price_request(args: argparse.Namespace) -> PriceRequest | None:
    """The price asked for, checked (one line, exit 2, on a mistake); ``None``: none."""
    from attnprof.commands.pricing import PriceRequest
    from attnprof.workload.prices import PRICES_ENV, load_prices, parse_price

    if given_flags(args, ("price",)).get("price") is not None:
        if given_flags(args, ("prices",)).get("prices"):
            from attnprof.errors import UsageError

            raise UsageError("--price and --prices both set the price; give one")
        return PriceRequest(parse_price("--price", args.price), None, "--price")
    path, named_by = given_flags(args, ("prices",)).get("prices"), "--prices"
    if not path and os.environ.get(PRICES_ENV):
        path, named_by = os.environ[PRICES_ENV], PRICES_ENV
    if not path:
        return None
    source = f"prices file {path!r} ({named_by})"
    return PriceRequest(None, load_prices(path, source), source)


def add_objective_argument(p: Any) -> None:
    """``recommend --objective latency|cost``, with the price flags cost needs."""
    p.add_argument("--objective", choices=("latency", "cost"), default="latency",
                   help="rank candidates by latency per call (default) or by cost per million "
                        "tokens at --price/--prices (a variant that fits a larger batch "
                        "within --max-memory may cost less per token)")
    add_price_arguments(p)


def objective_price(args: argparse.Namespace) -> PriceRequest | None:
    """The price ``--objective cost`` ranks at, checked before anything is measured:
    without one, one line naming the fix."""
    request = price_request(args)
    if given_flags(args, ("objective",)).get("objective") == "cost" and request is None:
        from attnprof.errors import UsageError
        from attnprof.workload.prices import PRICES_ENV

        raise UsageError("--objective cost needs a price: give --price USD_PER_HOUR (e.g. "
                         f"--price 2.5), --prices FILE, or set {PRICES_ENV}")
    return request


def say_unpriced(console: Any, request: PriceRequest | None, record: Any, device_name: str,
                 device_kind: str) -> None:
    """One yellow line when a price was asked for but the prices file has none for the
    machine that ran ``record``: no costs are shown then."""
    if request is None or record.price is not None:
        return
    from attnprof.commands.pricing import price_of

    _, note = price_of(request, device_name, device_kind)
    if note:
        console.print(note, style="yellow", markup=False, highlight=False)
