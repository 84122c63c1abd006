"""A price asked for (``--price``, ``--prices``), matched to the machine once the record
says which it is, and kept in the record (:class:`~attnprof.record.price.Price`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnprof.record.price import Price

__all__ = ["PriceRequest", "attach_price", "price_of", "rank_by_objective"]


@dataclass(frozen=True)
class PriceRequest:
    """A flat price, or a prices file's table, and the source to name."""

    usd_per_hour: float | None
    table: dict[str, float] | None
    source: str


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


def attach_price(request: PriceRequest | None, record: Any, device_name: str,
                 device_kind: str) -> str:
    """Set ``record.price`` (a sweep, model or comparison record) for the machine that ran
    it; the note to show when a prices file has none for it (else ``""``)."""
    record.price, unpriced = price_of(request, device_name, device_kind)
    return unpriced


def rank_by_objective(record: Any, request: PriceRequest | None, objective: str) -> str:
    """Price ``record``'s recommendation (a :class:`~attnprof.record.sweep.RecommendRecord`
    with one) at the machine's price and, for ``objective == "cost"``, rank it by cost per
    million tokens; a prices file without the machine leaves it ranked by latency. The
    note to show (else ``""``)."""
    from attnprof.analysis.recommend_cost import price_picks, recommend_by_cost

    rec = record.recommendation
    price, unpriced = price_of(request, record.environment.device_name,
                               record.base.device_type)
    cost = objective == "cost"
    if price is None:
        return unpriced + ("; ranked by latency instead" if cost and unpriced else "")
    rec.price = record.price = price
    if cost:
        rec.recommendations = recommend_by_cost(record.points, record.variants,
                                                rec.constraints, price.usd_per_hour,
                                                record.batch_points)
        rec.objective = "cost"
    else:
        rec.recommendations = price_picks(rec.recommendations, record.points,
                                          price.usd_per_hour)
    return ""
