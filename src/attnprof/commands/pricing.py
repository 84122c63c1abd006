"""A price asked for (``--price``, ``--prices``), matched to the machine once the record
says which it is, and kept in the record (:class:`~attnprof.record.price.Price`)."""

from __future__ import annotations

from dataclasses import dataclass

from attnprof.record.price import Price

__all__ = ["PriceRequest", "price_of"]


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
