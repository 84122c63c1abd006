"""Plots of a sweep (SVG or PNG): latency and peak memory against a swept field.

Log-log axes, one line per variant (and per group of the other swept fields), each
variant with a colour and a marker of its own (groups differ by line style), the fitted
exponent, R² and any caveat from the record in the legend. A point measured noisy
(IQR/median > 10%) is drawn hollow. A point where a variant did not run is an ✕ in the
variant's colour and marker lane along the bottom of the axes, and the legend says, per
variant, which statuses at which values — a variant that ran nowhere still has its entry.
It draws what the record holds; it fits nothing.

matplotlib is an optional extra (``pip install 'attnprof[plot]'``), imported only when a
plot is asked for, through its object API (no pyplot, no global backend state).
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from attnprof.atomic import check_writable, write_atomic
from attnprof.errors import UsageError
from attnprof.record.sweep import QUANTITIES, Quantity, SweepRecord
from attnprof.render.sweep_table import describe_fit
from attnprof.spec.grid import INTEGER_FIELDS, Grid

__all__ = ["FORMATS", "check_plot_path", "plot_field", "write_plot"]

FORMATS = (".svg", ".png")
_TITLES = {"latency_ms": "median latency per step (ms)",
           "peak_memory_bytes": "peak memory per step (MiB)"}
_SCALE = {"latency_ms": 1.0, "peak_memory_bytes": 1.0 / (1 << 20)}


def check_plot_path(path: str | os.PathLike[str]) -> Path:
    """Refuse, before anything runs, a plot path that is not .svg/.png or cannot be
    written, and say how to get matplotlib when it is missing."""
    p = check_writable(path, "--plot")
    if p.suffix.lower() not in FORMATS:
        raise UsageError(f"--plot {str(p)!r}: write a .svg or .png file")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError("--plot needs matplotlib; install it with "
                         "pip install 'attnprof[plot]'") from None
    return p


def plot_field(grid: Grid) -> str:
    """The field plots run along: the first swept size field."""
    sizes = [f for f in grid.fields if f in INTEGER_FIELDS]
    if not sizes:
        raise UsageError("--plot needs a swept size field (e.g. --seq 256..4096x2); this "
                         "sweep varies only names")
    return sizes[0]


def write_plot(record: SweepRecord, path: str | os.PathLike[str]) -> None:
    """Draw ``record`` and write it to ``path`` atomically (format from the suffix)."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    field = plot_field(record.grid)
    fig = Figure(figsize=(12, 5), layout="constrained")
    axes = fig.subplots(1, len(QUANTITIES))
    for ax, quantity in zip(axes, QUANTITIES, strict=True):
        _draw(ax, record, field, quantity)
    fig.suptitle(f"attnprof sweep {record.run_id} — {record.environment.device_name}",
                 fontsize=10)
    buffer = io.BytesIO()
    fmt = Path(path).suffix.lower().lstrip(".")
    # SVG text stays text (searchable, small); no date, so the same record draws the same file.
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": record.run_id}):
        fig.savefig(buffer, format=fmt, dpi=120,
                    metadata={"Date": None} if fmt == "svg" else None)
    write_atomic(path, buffer.getvalue())


#: Per variant, in the record's order: a marker (colours come from matplotlib's cycle).
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p")
#: Per group of the other swept fields: a line style.
_STYLES = ("-", "--", ":", "-.")
#: Height of each variant's lane of ✕ marks along the bottom, in axes coordinates.
_LANE = 0.035


def _draw(ax: object, record: SweepRecord, field: str, quantity: Quantity) -> None:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullLocator
    from matplotlib.transforms import blended_transform_factory

    assert isinstance(ax, Axes)
    bottom = blended_transform_factory(ax.transData, ax.transAxes)
    colors = _colors(len(record.variants))
    lines = _lines(record, field)
    groups = list(dict.fromkeys(group for _, group in lines))
    handles: list[Line2D] = []
    any_noisy = False
    for (variant, group), points in lines.items():
        index = record.variants.index(variant)
        color, marker = colors[index], _MARKERS[index % len(_MARKERS)]
        style = _STYLES[groups.index(group) % len(_STYLES)]
        xs, ys, noisy, failed = [], [], [], []
        for point in points:
            row = point.result(variant)
            if row is None:
                continue
            value = (row.latency_ms.median if row.latency_ms else None) \
                if quantity == "latency_ms" else row.peak_memory_bytes
            if row.status == "ok" and value:
                xs.append(point.coords[field])
                ys.append(value * _SCALE[quantity])
                if quantity == "latency_ms" and row.latency_ms and row.latency_ms.noisy:
                    noisy.append((xs[-1], ys[-1]))
            else:
                failed.append((point.coords[field], row.status))
        fit = next((f for f in record.fits if (f.variant, f.quantity, f.field) ==
                    (variant, quantity, field) and _key(f.group) == group), None)
        label = variant + (f" · {group}" if group else "")
        if fit is not None:
            label += f"  {describe_fit(fit)}"
        elif not xs:
            label += "  (ran at no point)"
        handles.append(ax.plot(xs, ys, marker=marker, linestyle=style, color=color,
                               label=label)[0])
        if noisy:  # hollow on top of the filled marker
            any_noisy = True
            ax.plot([x for x, _ in noisy], [y for _, y in noisy], marker=marker,
                    linestyle="none", markersize=8, markerfacecolor="white", color=color)
        if failed:
            lane = 0.02 + _LANE * (index % 8)
            ax.plot([x for x, _ in failed], [lane] * len(failed), marker="x",
                    markersize=7, linestyle="none", color=color, transform=bottom,
                    clip_on=False)
            handles.append(Line2D([], [], marker="x", linestyle="none", color=color,
                                  label=f"{variant} did not run: {_statuses(failed, field)}"))
    if any_noisy:
        handles.append(Line2D([], [], marker="o", linestyle="none", color="gray",
                              markerfacecolor="white",
                              label="hollow: latency noisy (IQR/median > 10%)"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = sorted({int(p.coords[field]) for p in record.points if field in p.coords})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.xaxis.set_minor_locator(NullLocator())  # the swept values are the ticks
    ax.set_xlabel(field)
    ax.set_title(_TITLES[quantity], fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    # Below the axes: entries never cover a line or a mark, however many there are.
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.12),
              frameon=False)


def _statuses(failed: list[tuple[int | str, str]], field: str) -> str:
    """``oom at seq=1024,2048; skipped at seq=4096``: each status with where it was."""
    where: dict[str, list[str]] = {}
    for x, status in failed:
        where.setdefault(status, []).append(str(x))
    return "; ".join(f"{status} at {field}={','.join(xs)}" for status, xs in where.items())


def _colors(n: int) -> list[Any]:
    """``n`` colours: matplotlib's default cycle, or tab20's when there are more."""
    from matplotlib import colormaps, rcParams

    base: list[Any] = list(rcParams["axes.prop_cycle"].by_key()["color"])
    if n <= len(base):
        return base
    return [colormaps["tab20"](i % 20) for i in range(n)]


def _lines(record: SweepRecord, field: str) -> dict[tuple[str, str], list]:
    """Points per (variant, the other coordinates), in field order."""
    lines: dict[tuple[str, str], list] = {}
    for point in sorted(record.points, key=lambda p: (p.coords.get(field, 0), p.index)):
        if field not in point.coords:
            continue
        group = _key({k: v for k, v in point.coords.items() if k != field})
        for variant in record.variants:
            lines.setdefault((variant, group), []).append(point)
    return lines


def _key(group: dict[str, int | str]) -> str:
    return " ".join(f"{k}={v}" for k, v in group.items())
