"""The terminal view of a sweep: one row per point, one column per variant, then the
scaling fits and crossovers the record carries. Formats only; computes nothing."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.formatting import counted, fmt_ms, format_bytes, one_line
from attnprof.record.sweep import Crossover, ScalingFit, SweepRecord
from attnprof.render.styles import STATUS_STYLE

__all__ = ["describe_fit", "render_sweep"]

_QUANTITY = {"latency_ms": "latency", "peak_memory_bytes": "peak memory"}


def render_sweep(record: SweepRecord, console: Console) -> None:
    """The points table, the failures under it, the fits and the crossovers."""
    points = record.ordered_points()
    env = record.environment
    swept = ", ".join(f"{a.field} {_values(a.values)}" for a in record.grid.axes) or "nothing"
    console.print(Text(f"attnprof sweep — {swept} × {', '.join(record.variants)}",
                       style="bold"))
    console.print(Text(f"fixed: {_fixed(record)}"))
    table = Table()
    fields = record.grid.fields
    for field in fields:
        table.add_column(field, justify="right", no_wrap=True)
    decode = any(p.kv_cache_bytes is not None for p in points)
    if decode:
        table.add_column("KV cache", justify="right", no_wrap=True)
    for variant in record.variants:
        table.add_column(Text(variant), justify="right")
    for point in points:
        cells: list[Text | str] = [str(point.coords.get(f, "")) for f in fields]
        if decode:
            cells.append(format_bytes(point.kv_cache_bytes))
        for variant in record.variants:
            row = point.result(variant)
            if row is None:
                cells.append("—")
            elif row.status == "ok":
                lat = row.latency_ms
                text = Text(f"{fmt_ms(lat.median if lat else None)} ms")
                if lat is not None and lat.noisy:
                    text.append(" noisy", style="yellow")
                text.append(f"\n{format_bytes(row.peak_memory_bytes)}", style="dim")
                if row.within_tolerance is False:
                    text.append("\nout of tolerance", style="bold red")
                cells.append(text)
            else:
                cells.append(Text(row.status, style=STATUS_STYLE.get(row.status, "")))
        table.add_row(*cells)
    console.print(table)
    console.print(Text(f"{len(points)} of {record.grid.size()} points · {env.device_name} · "
                       f"{_threads(record)} · torch {env.torch} · executor {record.executor}",
                       style="dim"))
    step = "per decode step" if decode else "per step"
    console.print(Text(f"each cell: median latency {step} (noisy: IQR/median > 10%), then "
                       f"peak memory; FLOPs: {record.flops_convention}", style="dim"))
    _failures(record, console)
    render_fits(record.fits, console)
    _crossovers(record.crossovers, console)
    if record.status != "complete":
        console.print(f"[yellow]sweep incomplete: {len(points)} of {record.grid.size()} points "
                      "finished; resume it with --resume[/yellow]")


def _threads(record: SweepRecord) -> str:
    """The threads the points ran with (each point's own environment), and this machine's
    where they differ (a Ray task's worker gets its own)."""
    here = record.environment.threads
    seen = sorted({p.environment.threads for p in record.points if p.environment})
    if not seen or seen == [here]:
        return counted(here, "thread")
    each = "-".join(map(str, (seen[0], seen[-1]))) if len(seen) > 1 else str(seen[0])
    return f"{each} thread{'s' if seen != [1] else ''} per point (this machine: {here})"


def _fixed(record: SweepRecord) -> str:
    """The base workload's fields the grid does not sweep, in ``describe()``'s words."""
    b, swept = record.base, set(record.grid.fields)
    # K/V heads and length are shown only where they do not simply follow heads and seq.
    shown = {"kv_heads": b.num_kv_heads != b.heads or "kv_heads" in record.fields,
             "kv_seq": "kv_seq" in record.fields}
    parts = [f"{label}={getattr(b, name)}" for name, label in
             (("batch", "B"), ("heads", "H"), ("kv_heads", "KV"), ("seq", "S"),
              ("kv_seq", "Sk"), ("head_dim", "D"))
             if name not in swept and shown.get(name, True)]
    parts += [getattr(b, name) for name in ("dtype", "mode") if name not in swept]
    parts += [b.device, b.mask_label]
    return " ".join(str(p) for p in parts)


def _values(values: list[int | str]) -> str:
    if len(values) > 6:
        return f"{values[0]}..{values[-1]} ({len(values)} values)"
    return ",".join(map(str, values))


def _failures(record: SweepRecord, console: Console) -> None:
    """One line per failed row (skips folded into one line per variant)."""
    lines: list[Text] = []
    skipped: dict[str, int] = {}
    for point in record.ordered_points():
        for row in point.results:
            if row.status == "ok":
                continue
            if row.status == "skipped":
                skipped[row.variant] = skipped.get(row.variant, 0) + 1
                continue
            where = " ".join(f"{k}={v}" for k, v in point.coords.items())
            line = Text(f"#{point.index} {where} ")
            line.append(row.variant, style="bold")
            line.append(f" {row.status}", style=STATUS_STYLE.get(row.status, ""))
            line.append(f": {one_line(row.reason, 300)}")
            lines.append(line)
    for variant, count in skipped.items():
        lines.append(Text(f"{variant}: {count} larger point(s) skipped, inferred out of memory "
                          "from a smaller one", style="dim"))
    for line in lines:
        console.print(line)


def describe_fit(fit: ScalingFit) -> str:
    """``∝ seq^1.98 [1.91, 2.05], R² 0.999`` (the legend and the table say the same), and
    ``⚠ noisy at seq=512`` when the fit has caveats."""
    text = f"∝ {fit.field}^{fit.exponent:.2f}"
    if fit.ci95 is not None:
        text += f" [{fit.ci95[0]:.2f}, {fit.ci95[1]:.2f}]"
    if fit.r_squared is not None:
        text += f", R² {fit.r_squared:.3f}"
    if fit.caveats:
        text += f" ⚠ {fit.caveats[0]}" + (" …" if len(fit.caveats) > 1 else "")
    return text


def render_fits(fits: list[ScalingFit], console: Console) -> None:
    """The fitted exponents, one row per variant, group and quantity."""
    if not fits:
        return
    table = Table(title="scaling: least squares on log-log axes, 95% interval of the exponent "
                        "from Student's t", title_justify="left")
    table.add_column("variant", style="bold", no_wrap=True)
    table.add_column("held fixed", no_wrap=True)
    table.add_column("quantity", no_wrap=True)
    table.add_column("exponent", justify="right", no_wrap=True)
    table.add_column("95% interval", justify="right", no_wrap=True)
    table.add_column("R²", justify="right", no_wrap=True)
    table.add_column("fitted over", no_wrap=True)
    caveats = any(f.caveats for f in fits)
    if caveats:
        table.add_column("read with care", overflow="fold", style="yellow")
    for f in fits:
        group = " ".join(f"{k}={v}" for k, v in f.group.items()) or "—"
        ci = f"{f.ci95[0]:.2f} … {f.ci95[1]:.2f}" if f.ci95 else "— (2 points)"
        r2 = f"{f.r_squared:.3f}" if f.r_squared is not None else "—"
        cells: list[Text | str] = [
            Text(f.variant), group, _QUANTITY[f.quantity], f"{f.field}^{f.exponent:.2f}", ci,
            r2, f"{f.field} {f.fitted_range[0]}..{f.fitted_range[1]} ({f.points} points)"]
        if caveats:
            cells.append(Text("; ".join(f.caveats)))
        table.add_row(*cells)
    console.print(table)


def _crossovers(crossovers: list[Crossover], console: Console) -> None:
    for c in crossovers:
        group = " ".join(f"{k}={v}" for k, v in c.group.items())
        line = Text(f"{c.overtaker}", style="bold")
        line.append(f" overtakes {c.overtaken} in {_QUANTITY[c.quantity]} at {c.field} ≈ "
                    f"{c.at:.0f} (measured between {c.between[0]} and {c.between[1]})"
                    f"{' · ' + group if group else ''}")
        if c.caveat:
            line.append(f" ⚠ may be noise: {c.caveat}", style="yellow")
        console.print(line)
