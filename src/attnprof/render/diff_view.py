"""The terminal view of a diff: what changed around the numbers, the rows old against new
with benchstat's verdicts ("~": not significant), and the traces' changed kernels and ops.
Formats only; every verdict is in the record."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.formatting import counted, fmt_ms, format_bytes, format_us
from attnprof.record.diff import DiffRecord, DiffSide, MetricChange, RegionDiff, RowDiff, TraceDiff
from attnprof.render.styles import STATUS_STYLE

__all__ = ["format_change", "render_diff"]

_METRIC_TITLE = {"latency_ms": "latency", "peak_memory_bytes": "peak memory",
                 "attention_share": "attention share", "attention_us": "attention / step",
                 "layer_us": "layer / step", "usd_per_million_tokens": "$ per 1M tokens"}
_STATE_STYLE = {"broken": "bold red", "fixed": "green", "failing": "yellow", "added": "cyan",
                "removed": "cyan"}


def render_diff(record: DiffRecord, console: Console, top: int = 15) -> None:
    """The whole diff: sides, changes, rows, states, traces, warnings."""
    console.print(Text.assemble(("attnprof diff  ", "bold"), _side(record.old), "  →  ",
                                _side(record.new)))
    if not record.changes and record.rows:
        console.print(Text("same environment, settings and workload on both sides",
                           style="dim"))
    if record.changes:
        table = Table(title="changed around the numbers", title_justify="left")
        for column in ("", "what", "old", "new"):
            table.add_column(column)
        for c in record.changes:
            table.add_row(c.scope, Text(c.what), Text(c.old), Text(c.new, style="bold"))
        console.print(table)
    groups: dict[tuple[tuple[str, ...], tuple[str, ...]], list[RowDiff]] = {}
    for row in record.rows:
        if row.state == "compared":
            shape = (tuple(row.key), tuple(m.metric for m in row.metrics))
            groups.setdefault(shape, []).append(row)
    for (keys, metrics), rows in groups.items():
        console.print(_rows_table(keys, metrics, rows, record.alpha))
    for row in record.rows:
        if row.state != "compared":
            console.print(_state_line(row))
    for trace in record.traces:
        _render_trace(trace, console, top)
    if record.rows:
        tests = {"speed" if m.adjusted_change is not None else m.test
                 for row in record.rows for m in row.metrics if m.test}
        how = " and ".join(_TEST_TEXT[t] for t in sorted(tests, reverse=True)) or (
            _TEST_TEXT["samples"])
        console.print(Text(f"p: {how}, Holm-adjusted "
                           f"over {counted(_tested(record), 'test')}; \"~\": no significant "
                           f"change at alpha={record.alpha:g}; memory is one exact "
                           "measurement", style="dim"))
    for warning in record.warnings:
        console.print(Text(f"warning: {warning}", style="yellow"))


def _side(side: DiffSide) -> Text:
    text = Text(side.ref, style="bold")
    extra = [x for x in (side.kind, side.run_id if side.run_id != side.ref else None,
                         f"label {side.label}" if side.label and side.label != side.ref
                         else None, side.created) if x]
    return text.append(f" ({' · '.join(extra)})", style="dim") if extra else text


#: How each kind of test is said under the table.
_TEST_TEXT = {"samples": "two-sided Mann-Whitney U on the raw samples",
              "processes": "Welch's t on the log medians of each side's processes",
              "speed": "Welch's t on the log medians of each side's processes, each "
                       "process's speed (its other rows) taken out: the change 'beside "
                       "speed'"}


def _tested(record: DiffRecord) -> int:
    return sum(m.p_value is not None for row in record.rows for m in row.metrics)


def format_change(m: MetricChange) -> Text:
    """``+10.3%`` in colour when significant, ``~`` when not, plain when not judged."""
    if m.change is None and m.grew_from_zero and m.new is not None:
        # Growth from zero has no ratio: it is said in its unit.
        return Text(f"+{_value(m, m.new)}", style="bold red" if m.worse else "dim")
    if m.change is None:
        return Text("—" if m.old is None or m.new is None else "n/a", style="dim")
    shown = f"{m.change * 100:+.1f}%"
    if m.adjusted_change is not None:  # the change the test judged, beside the speed
        shown += f" ({m.adjusted_change * 100:+.1f}% beside speed)"
    if m.not_judged:
        return Text(f"{shown} not judged", style="yellow")
    if m.significant is None:
        return Text(shown, style="dim")
    if not m.significant:
        return Text("~")
    return Text(shown, style="bold red" if m.worse else "bold green")


def _value(m: MetricChange, value: float | None) -> str:
    if m.unit == "ms":
        return f"{fmt_ms(value)} ms" if value is not None else "—"
    if m.unit == "B":
        return format_bytes(value)
    if m.unit == "µs":
        return format_us(value)
    if m.unit == "$":
        return "—" if value is None else f"${value:.4g}"
    return "—" if value is None else f"{value:.1%}" if m.metric.endswith("share") else f"{value:g}"


def _evidence(m: MetricChange) -> Text:
    if m.not_judged:  # a p-value here would look decisive where nothing was judged
        return Text(f"not judged ({m.not_judged})", style="yellow")
    if m.p_value is not None:
        p = m.p_adjusted if m.p_adjusted is not None else m.p_value
        text = Text(f"p={p:.3f} processes {len(m.old_processes)}+{len(m.new_processes)}"
                    if m.test == "processes" else f"p={p:.3f} n={m.n_old}+{m.n_new}")
        if m.detectable is False:
            text.append(" (too few)", style="yellow")
        return text
    if m.exact:
        return Text("exact", style="dim")
    return Text("")


def _rows_table(keys: tuple[str, ...], metrics: tuple[str, ...], rows: list[RowDiff],
                alpha: float) -> Table:
    table = Table()
    for key in keys:
        table.add_column(key, no_wrap=True)
    for metric in metrics:
        title = _METRIC_TITLE.get(metric, metric)
        table.add_column(f"{title} old", justify="right")
        table.add_column("new", justify="right")
        table.add_column("change", justify="right")
        if any((m := r.metric(metric)) is not None and m.p_value is not None for r in rows):
            table.add_column("p (n)", justify="right")
    table.add_column("notes")
    tested = {metric: any((m := r.metric(metric)) is not None and m.p_value is not None
                          for r in rows) for metric in metrics}
    for row in rows:
        cells: list[Text | str] = [Text(str(v)) for v in row.key.values()]
        for metric in metrics:
            m = row.metric(metric)
            assert m is not None
            cells += [_value(m, m.old), _value(m, m.new), format_change(m)]
            if tested[metric]:
                cells.append(_evidence(m))
        cells.append(Text("; ".join(row.notes), style="dim"))
        table.add_row(*cells)
    return table


def _state_line(row: RowDiff) -> Text:
    key = " ".join(str(v) for v in row.key.values())
    style = _STATE_STYLE.get(row.state, "")
    text = Text(f"{row.state}: ", style=style).append(key, style="bold")
    if row.old_status or row.new_status:
        old = Text(row.old_status or "—", style=STATUS_STYLE.get(row.old_status or "", ""))
        new = Text(row.new_status or "—", style=STATUS_STYLE.get(row.new_status or "", ""))
        text.append("  ").append(old).append(" → ").append(new)
    if row.reason:
        text.append(f" — {row.reason}", style="dim")
    return text


def _render_trace(trace: TraceDiff, console: Console, top: int) -> None:
    title = f"{trace.old_source} → {trace.new_source}"
    console.rule(Text(f"{trace.name}: {title}" if trace.name else title, style="bold"))
    for region in trace.regions:
        _render_region(region, console, top)
    for side, names in (("old", trace.unmatched_old), ("new", trace.unmatched_new)):
        if names:
            console.print(Text(f"regions only in the {side} trace: {', '.join(names)}",
                               style="yellow"))
    for finding in trace.findings_gone:
        console.print(Text("finding gone: ", style="green").append(finding))
    for finding in trace.findings_appeared:
        console.print(Text("finding appeared: ", style="red").append(finding))


def _render_region(region: RegionDiff, console: Console, top: int) -> None:
    name = (region.old_name if region.old_name == region.new_name
            else f"{region.old_name} → {region.new_name}")
    if region.unit == "step":  # a training step: attention's time first, then the ops
        console.print(_attention_line(region))
    unit = "compute ops" if region.kernel_source == "cpu-ops" else "kernels"
    head = Text(f"{name}: ", style="bold").append(
        f"{unit} per {region.unit} {region.old_kernels_per_forward:g} → "
        f"{region.new_kernels_per_forward:g}; {region.old_instances} → "
        f"{region.new_instances} {region.unit}s")
    console.print(head)
    launches = [c for c in region.launches if c.state != "same"]
    for what, changed, total in (("kernels", region.changed_kernels(), region.kernels),
                                 ("ops", region.changed_ops(), region.ops),
                                 ("launches", launches, region.launches)):
        label = {"kernels": unit, "ops": "ops (CPU ops and annotations)",
                 "launches": "launch calls"}[what]
        if not total:
            continue
        if not changed:
            console.print(Text(f"{label}: no change in {counted(len(total), 'name')}",
                               style="dim"))
            continue
        table = Table(title=f"{label} that changed, per forward ({len(changed)} of "
                            f"{len(total)}; {len(total) - len(changed)} unchanged)",
                      title_justify="left")
        # Kernel names run to hundreds of characters of template arguments: one line each.
        table.add_column("name", no_wrap=True, overflow="ellipsis", max_width=90)
        for column in ("old", "new", "", "time old", "time new"):
            table.add_column(column, justify="left" if not column else "right")
        for c in changed[:top]:
            table.add_row(Text(c.name), f"{c.old_per_forward:g}", f"{c.new_per_forward:g}",
                          Text(c.state, style="red" if c.state in ("added", "more")
                               else "green"),
                          format_us(c.old_us), format_us(c.new_us))
        if len(changed) > top:
            table.add_row(Text(f"… {len(changed) - top} more", style="dim"), "", "", "", "",
                          "")
        console.print(table)
    times = Table(title="time per forward (one capture each side: not judged)",
                  title_justify="left")
    for column in ("", "old", "new", "change"):
        times.add_column(column, justify="right" if column else "left")
    for kind, rows in (("family", region.families[:top]), ("category", region.categories)):
        for t in rows:
            change = f"{t.new_us / t.old_us - 1:+.0%}" if t.old_us else "new"
            times.add_row(Text(f"{kind} {t.name}"), format_us(t.old_us), format_us(t.new_us),
                          change)
    console.print(times)


def _attention_line(region: RegionDiff) -> Text:
    """``attention X → Y ms per step (forward a → b, backward c → d)``."""
    line = Text("attention ", style="bold").append(
        f"{_ms(region.old_attention_us)} → {_ms(region.new_attention_us)} ms per step",
        style="bold")
    phases = [p for p in ("forward", "backward")
              if p in region.old_attention_by_phase or p in region.new_attention_by_phase]
    if phases:
        line.append(" (" + ", ".join(
            f"{p} {_ms(region.old_attention_by_phase.get(p))} → "
            f"{_ms(region.new_attention_by_phase.get(p))}" for p in phases) + ")")
    return line


def _ms(us: float | None) -> str:
    return "—" if us is None else f"{us / 1e3:.2f}"


def render_gate(found: list[tuple[RowDiff, MetricChange | None]], percent: float,
                console: Console, blind: int = 0, unjudged: int = 0) -> None:
    """The CI gate's verdict: each regression, or that there is none (and how many rows it
    could not judge at ``percent``, or did not judge at all)."""
    if unjudged:
        console.print(Text(f"regression gate ({percent:g}%): {unjudged} row(s) not judged "
                           "(1 process a side; see the warning): the gate cannot vouch for "
                           "them", style="yellow"))
    if not found:
        console.print(Text(f"regression gate ({percent:g}%): passed — no significant "
                           f"slowdown or memory growth above {percent:g}%, no row broke",
                           style="green"))
        if blind:
            console.print(Text(f"  but {blind} row(s) could not have shown a {percent:g}% "
                               "slowdown with their samples and noise (see the warning)",
                               style="yellow"))
        return
    console.print(Text(f"regression gate ({percent:g}%): {len(found)} regression(s)",
                       style="bold red"))
    for row, metric in found:
        key = " ".join(str(v) for v in row.key.values())
        if metric is None:
            console.print(Text(f"  {key}: broke ({row.old_status} → {row.new_status})"))
            continue
        title = _METRIC_TITLE.get(metric.metric, metric.metric)
        evidence = _evidence(metric).plain
        change = (format_change(metric).plain if metric.judged_change is None
                  else f"{metric.judged_change:+.1%}")
        console.print(Text(f"  {key}: {title} {_value(metric, metric.old)} → "
                           f"{_value(metric, metric.new)} ({change}"
                           f"{', ' + evidence if evidence else ''})"))
