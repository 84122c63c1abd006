"""Rows of two records matched by what they measured, each metric compared.

A comparison's rows match by variant, a sweep's by point coordinates and variant, a
model's by implementation and phase (and, below each, by layer). A row measured on one
side and failing on the other is a state of its own (``broken``, ``fixed``), as are rows
failing on both sides and rows only one side has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from attnprof.analysis.diff.metrics import exact, informative, sampled
from attnprof.analysis.diff.processes import process_latency
from attnprof.record.compare import CompareRecord, Latency, VariantResult
from attnprof.record.diff import MetricChange, RowDiff, RowState
from attnprof.record.model import ModelRecord, PhaseRun
from attnprof.record.model_attribution import LayerReport, ModelAttribution
from attnprof.record.sweep import SweepRecord
from attnprof.workload.prices import tokens_per_call, usd_per_call

__all__ = ["compare_rows", "model_rows", "sweep_rows"]

T = TypeVar("T")
Key = dict[str, "str | int"]


def compare_rows(old: CompareRecord, new: CompareRecord, alpha: float) -> list[RowDiff]:
    """One row per variant of either comparison (with each side's price, its cost per
    million tokens beside the latency)."""
    rows = _match(old.results, new.results, lambda r: {"variant": r.variant},
                  lambda a, b, key: _variant_row(a, b, key, alpha))
    if old.price is not None and new.price is not None:
        _add_costs(rows, old, new)
    return rows


def _add_costs(rows: list[RowDiff], old: CompareRecord, new: CompareRecord) -> None:
    """Each compared row's cost per million tokens, old and new, shown, not judged: the
    latency beside it is what is judged (a price change moves it too)."""
    assert old.price is not None and new.price is not None

    def per_million(record: CompareRecord, price: float, variant: object) -> float | None:
        row = next((r for r in record.results if r.variant == variant), None)
        if row is None or row.latency_ms is None:
            return None
        return (usd_per_call(price, row.latency_ms.median)
                / tokens_per_call(record.workload) * 1e6)

    for row in rows:
        if row.state == "compared":
            variant = row.key.get("variant")
            row.metrics.append(informative(
                "usd_per_million_tokens", "$", per_million(old, old.price.usd_per_hour, variant),
                per_million(new, new.price.usd_per_hour, variant)))


def sweep_rows(old: SweepRecord, new: SweepRecord, alpha: float) -> list[RowDiff]:
    """One row per point (by its coordinates) and variant of either sweep."""
    def rows(record: SweepRecord) -> list[tuple[Key, VariantResult]]:
        return [({**p.coords, "variant": r.variant}, r) for p in record.ordered_points()
                for r in p.results]

    return _match(rows(old), rows(new), lambda pair: pair[0],
                  lambda a, b, key: _variant_row(a and a[1], b and b[1], key, alpha))


def model_rows(old: ModelRecord, new: ModelRecord, alpha: float) -> list[RowDiff]:
    """One row per implementation and phase, then one per layer of each (its attention
    time per step, shown, not judged: one trace per side)."""
    runs = _match(old.runs, new.runs,
                  lambda r: {"implementation": r.implementation, "phase": r.phase},
                  lambda a, b, key: _phase_row(a, b, key, alpha))
    layers: list[RowDiff] = []
    for row in runs:
        if row.state != "compared":
            continue
        a = old.run(str(row.key["implementation"]), str(row.key["phase"]))
        b = new.run(str(row.key["implementation"]), str(row.key["phase"]))
        if a.attribution is not None and b.attribution is not None:
            layers += _layer_rows(row.key, a.attribution, b.attribution)
    return runs + layers


def _layer_rows(key: Key, old: ModelAttribution, new: ModelAttribution) -> list[RowDiff]:
    """One row per layer of two attributions: attention and layer time per step, each on
    its own side's time basis."""
    def build(a: LayerReport | None, b: LayerReport | None, row_key: Key) -> RowDiff:
        return RowDiff(key=row_key, state=_state(a, b), metrics=[
            informative("attention_us", "µs", a.attention_on(old.time_basis) if a else None,
                        b.attention_on(new.time_basis) if b else None),
            informative("layer_us", "µs", a.total_on(old.time_basis) if a else None,
                        b.total_on(new.time_basis) if b else None)])

    return _match(old.layers, new.layers, lambda layer: {**key, "layer": layer.name}, build)


def _match(old: Iterable[T], new: Iterable[T], key_of: Callable[[T], Key],
           build: Callable[[T | None, T | None, Key], RowDiff]) -> list[RowDiff]:
    """Rows of both sides by key: the old side's order, then rows only the new side has."""
    def keyed(items: Iterable[T]) -> dict[tuple[tuple[str, Any], ...], tuple[Key, T]]:
        out: dict[tuple[tuple[str, Any], ...], tuple[Key, T]] = {}
        for item in items:
            key = key_of(item)
            out.setdefault(tuple(key.items()), (key, item))  # a repeated key: the first
        return out

    a, b = keyed(old), keyed(new)
    rows = [build(item, b[k][1] if k in b else None, key) for k, (key, item) in a.items()]
    rows += [build(None, item, key) for k, (key, item) in b.items() if k not in a]
    return rows


def _state(old: object | None, new: object | None, old_ok: bool = True,
           new_ok: bool = True) -> RowState:
    if old is None:
        return "added"
    if new is None:
        return "removed"
    if old_ok and new_ok:
        return "compared"
    if old_ok:
        return "broken"
    return "fixed" if new_ok else "failing"


def _latency(metric: str, old: Latency | None, new: Latency | None,
             alpha: float) -> MetricChange:
    if (old is not None and new is not None and len(old.process_medians) >= 2
            and len(new.process_medians) >= 2):  # the process is the unit: processes.py
        return process_latency(metric, old, new)
    return sampled(metric, "ms", old.samples if old else [], new.samples if new else [],
                   alpha)


def _variant_row(old: VariantResult | None, new: VariantResult | None, key: Key,
                 alpha: float) -> RowDiff:
    state = _state(old, new, old is not None and old.status == "ok",
                   new is not None and new.status == "ok")
    row = RowDiff(key=key, state=state, old_status=old.status if old else None,
                  new_status=new.status if new else None,
                  reason=_reason(old, new))
    if state != "compared" or old is None or new is None:
        return row
    row.metrics = [_latency("latency_ms", old.latency_ms, new.latency_ms, alpha),
                   exact("peak_memory_bytes", "B", _float(old.peak_memory_bytes),
                         _float(new.peak_memory_bytes))]
    row.notes = _notes(old, new)
    return row


def _phase_row(old: PhaseRun | None, new: PhaseRun | None, key: Key,
               alpha: float) -> RowDiff:
    state = _state(old, new, old is not None and old.status == "ok",
                   new is not None and new.status == "ok")
    row = RowDiff(key=key, state=state, old_status=old.status if old else None,
                  new_status=new.status if new else None, reason=_reason(old, new))
    if state != "compared" or old is None or new is None:
        return row
    row.metrics = [_latency("latency_ms", old.latency_ms, new.latency_ms, alpha),
                   exact("peak_memory_bytes", "B", _float(old.peak_memory_bytes),
                         _float(new.peak_memory_bytes)),
                   informative("attention_share", "", old.attention_share,
                               new.attention_share)]
    row.notes = _notes(old, new)
    return row


def _float(value: int | None) -> float | None:
    return None if value is None else float(value)


def _reason(old: VariantResult | PhaseRun | None, new: VariantResult | PhaseRun | None) -> str:
    for side in (new, old):
        if side is not None and side.status != "ok":
            return side.reason
    return ""


def _notes(old: VariantResult | PhaseRun, new: VariantResult | PhaseRun) -> list[str]:
    """What changed in the row besides its numbers: the backend that ran, whether the
    output is within tolerance, whether the samples were noisy."""
    notes = []
    if old.sdpa_backend != new.sdpa_backend:
        notes.append(f"SDPA backend: {old.sdpa_backend or 'none'} → "
                     f"{new.sdpa_backend or 'none'}")
    if old.within_tolerance is not None and old.within_tolerance != new.within_tolerance:
        now = {True: "within", False: "outside", None: "not checked"}[new.within_tolerance]
        notes.append(f"output now {now} tolerance of the reference")
    for side, run in (("old", old), ("new", new)):
        if run.latency_ms is not None and run.latency_ms.noisy:
            notes.append(f"noisy on the {side} side (IQR/median > 10%)")
    return notes
