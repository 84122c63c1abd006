"""``--price USD_PER_HOUR`` and ``--prices FILE`` (or ``ATTNPROF_PRICES``): read and
checked before anything is measured, matched to the machine once the record says which
it is, and kept in the record (:class:`~attnprof.record.price.Price`)."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

from attnprof.cli.flags import given_flags
from attnprof.record.price import Price

__all__ = ["PriceRequest", "add_objective_argument", "add_price_arguments", "attach_price",
           "objective_price", "price_of", "price_request", "rank_by_objective"]


def add_price_arguments(p: Any) -> None:
    """``--price`` and ``--prices``."""
    p.add_argument("--price", metavar="USD_PER_HOUR",
                   help="what an hour of this machine costs: each ok row then shows its cost "
                        "per call and per million tokens, kept in the record")
    p.add_argument("--prices", metavar="FILE",
                   help="a prices file (TOML: [prices] device-name-or-kind = USD per hour); "
                        "default: the file ATTNPROF_PRICES names, if set")


@dataclass(frozen=True)
class PriceRequest:
    """A flat price, or a prices file's table, and the source to name."""

    usd_per_hour: float | None
    table: dict[str, float] | None
    source: str


def price_request(args: argparse.Namespace) -> PriceRequest | None:
    """The price asked for, checked (one line, exit 2, on a mistake); ``None``: none."""
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


def price_of(request: PriceRequest | None, device_name: str,
             device_kind: str) -> tuple[Price | None, str]:
    """The price of the machine called ``device_name`` (of kind ``cpu`` or ``cuda``), and
    a note when a prices file has none for it."""
    if request is None:
        return None, ""
    if request.usd_per_hour is not None:
        return Price(usd_per_hour=request.usd_per_hour, source=request.source), ""
    from attnprof.knowledge.devices import device_for_name
    from attnprof.workload.prices import find_price

    assert request.table is not None
    known = device_for_name(device_name)
    names = [device_name, *([known.name] if known else []), device_kind]
    found = find_price(request.table, names)
    if found is None:
        return None, (f"no price for {device_name!r} in {request.source} (tried "
                      f"{', '.join(repr(n) for n in names)}): no costs shown")
    return Price(usd_per_hour=found[1], source=f"{request.source}: {found[0]}"), ""


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


def rank_by_objective(args: argparse.Namespace, request: PriceRequest | None,
                      record: Any, console: Any) -> None:
    """Price ``record``'s recommendation (a :class:`~attnprof.record.sweep.RecommendRecord`
    with one) at the machine's price and, under ``--objective cost``, rank it by cost per
    million tokens; a prices file without the machine leaves it ranked by latency, and
    says so."""
    from attnprof.analysis.recommend_cost import price_picks, recommend_by_cost

    rec = record.recommendation
    price, unpriced = price_of(request, record.environment.device_name,
                               record.base.device_type)
    cost = given_flags(args, ("objective",)).get("objective") == "cost"
    if price is None:
        if unpriced:
            console.print(unpriced + ("; ranked by latency instead" if cost else ""),
                          style="yellow", markup=False, highlight=False)
        return
    rec.price = record.price = price
    if cost:
        rec.recommendations = recommend_by_cost(record.points, record.variants,
                                                rec.constraints, price.usd_per_hour,
                                                record.batch_points)
        rec.objective = "cost"
    else:
        rec.recommendations = price_picks(rec.recommendations, record.points,
                                          price.usd_per_hour)


def attach_price(request: PriceRequest | None, record: Any, device_name: str,
                 device_kind: str, console: Any, save_to: str | None = None) -> None:
    """Set ``record.price`` (a sweep, model or comparison record) for the machine that ran
    it, say when a prices file has none for it, and save the priced record again to
    ``save_to`` (the record file written while it ran)."""
    record.price, unpriced = price_of(request, device_name, device_kind)
    if unpriced:
        console.print(unpriced, style="yellow", markup=False, highlight=False)
    if save_to and record.price is not None:
        record.save(save_to)
