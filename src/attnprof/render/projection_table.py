"""``attnprof project``'s view: per row and target, the bound, the projection where one can
be made, and the largest sequence the scaled peak fits; the assumptions under it. Formats
only: every figure comes from :mod:`attnprof.analysis.projection`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from attnprof.analysis.kv_capacity import KV_ASSUMPTIONS, KvFit, KvShape
from attnprof.analysis.projection import ASSUMPTIONS, SEQ_STEP, RowProjection, Target
from attnprof.formatting import format_bytes
from attnprof.workload.problem import Workload

__all__ = ["kv_data", "projection_data", "render_kv", "render_projection"]


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.4g}"


def render_projection(console: Console, workload: Workload, rows: Sequence[RowProjection],
                      targets: Sequence[Target], measured_s: dict[str, float | None]) -> None:
    """The table, then each target's figures and what every bound assumes; ``measured_s``:
    each variant's median latency where it was measured, in seconds."""
    table = Table(title=f"Bounds on other hardware: {workload.describe()}",
                  caption="bound and projection are computed, never measured")
    for name, justify in (("variant", "left"), ("target", "left"),
                          ("measured here (ms)", "right"), ("bound (ms)", "right"),
                          ("limited by", "left"), ("projection (ms)", "right"),
                          ("largest seq (estimate)", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for p in rows:
        bound = p.bound
        largest = ("—" if p.memory is None
                   else f"< {SEQ_STEP}" if p.memory.largest_seq is None
                   else f"{'≥ ' if p.memory.at_limit else ''}{p.memory.largest_seq:,} "
                        f"({p.memory.scaling})")
        table.add_row(p.variant, p.target, _ms(measured_s.get(p.variant)),
                      _ms(bound.seconds) if bound else f"none: {p.no_bound}",
                      (bound.limited_by + (" (I/O floor)" if bound.bytes_basis != "traffic"
                                           else "")) if bound else "—",
                      _ms(p.projection_s), largest)
    console.print(table)
    for t in targets:
        peak = ("no figure" if t.peak_flops_per_s is None
                else f"{t.peak_flops_per_s / 1e12:.4g} TFLOP/s")
        memory = "—" if t.memory_bytes is None else format_bytes(t.memory_bytes)
        console.print(f"  {t.name}: {peak} ({workload.dtype}), "
                      f"{t.bandwidth_bytes_per_s / 1e9:.4g} GB/s, memory {memory}"
                      + (f"; {t.why_no_peak}" if t.why_no_peak else ""))
    console.print(f"  {ASSUMPTIONS}")
    on_floor = sorted({p.variant for p in rows if p.bound and p.bound.bytes_basis != "traffic"})
    if on_floor:
        console.print(f"  I/O floor: {', '.join(on_floor)} had no traffic modelled (a record "
                      "from before traffic was): the memory roof is over the bytes any "
                      "variant must move (q, k, v read, out written once), so the bound is "
                      "still a bound, a looser one")
    for note in dict.fromkeys(p.projection_note for p in rows if p.projection_note):
        console.print(f"  {note}")
    console.print(f"  largest seq: an estimate, the measured peak at seq {workload.seq} "
                  "scaled (the rest above output and gradients quadratic in seq for a "
                  "variant that materialises the scores, else linear), in steps of "
                  f"{SEQ_STEP}; fits as limits judges it (inputs excluded)")


def projection_data(source: str, workload: Workload, rows: Sequence[RowProjection],
                    targets: Sequence[Target]) -> dict[str, Any]:
    """The projection as plain data for ``--json``: every figure labelled for what it is."""
    return {
        "kind": "projection", "source": source, "workload": workload.to_dict(),
        "assumptions": ASSUMPTIONS,
        "targets": [{"name": t.name, "family": t.family, "peak_flops_per_s":
                     t.peak_flops_per_s, "bandwidth_bytes_per_s": t.bandwidth_bytes_per_s,
                     "memory_bytes": t.memory_bytes, "no_peak": t.why_no_peak or None}
                    for t in targets],
        "rows": [{"variant": p.variant, "target": p.target,
                  "bound_s": p.bound.seconds if p.bound else None,
                  "bound_compute_s": p.bound.compute_s if p.bound else None,
                  "bound_memory_s": p.bound.memory_s if p.bound else None,
                  "limited_by": p.bound.limited_by if p.bound else None,
                  "bytes_basis": p.bound.bytes_basis if p.bound else None,
                  "no_bound": p.no_bound or None, "projection_s": p.projection_s,
                  "projection_note": p.projection_note,
                  "memory_scaling": p.memory.scaling if p.memory else None,
                  "largest_seq_estimate": p.memory.largest_seq if p.memory else None,
                  "largest_seq_at_search_limit": p.memory.at_limit if p.memory else None}
                 for p in rows],
    }


def render_kv(console: Console, shape: KvShape, fits: Sequence[KvFit]) -> None:
    """The KV cache per token and the largest context each target fits, labelled as a
    model; nothing when there are no fits."""
    if not fits:
        return
    table = Table(title=f"KV cache on each target (a model): batch {shape.batch}",
                  caption="computed from the shapes, never measured")
    for name in ("target", "memory", "weights held", "KV / token / sequence",
                 "largest context (tokens / sequence)"):
        table.add_column(name, justify="left" if name == "target" else "right")
    for f in fits:
        table.add_row(f.target, format_bytes(f.memory_bytes), format_bytes(f.reserved_bytes),
                      format_bytes(f.bytes_per_token),
                      f"{f.largest_context:,}" if f.largest_context is not None
                      else f"none: {f.why_none}")
    console.print(table)
    console.print(f"  KV basis: {shape.basis}")
    console.print(f"  {KV_ASSUMPTIONS}")


def kv_data(shape: KvShape, fits: Sequence[KvFit]) -> dict[str, Any]:
    """The KV table as plain data for ``--json``."""
    return {"model": KV_ASSUMPTIONS, "basis": shape.basis, "layers": shape.layers,
            "kv_heads": shape.kv_heads, "head_dim": shape.head_dim,
            "element_bytes": shape.element_bytes, "batch": shape.batch,
            "bytes_per_token": shape.bytes_per_token,
            "targets": [{"target": f.target, "memory_bytes": f.memory_bytes,
                         "reserved_bytes": f.reserved_bytes,
                         "largest_context": f.largest_context,
                         "no_fit": f.why_none or None} for f in fits]}
