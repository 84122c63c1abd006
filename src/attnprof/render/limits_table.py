"""Terminal view of memory ceilings: the measured largest size beside the textbook one."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.analysis.memory_fit import DEFINITION
from attnprof.formatting import fmt_ms, format_bytes
from attnprof.record.limits import Ceiling, Probe
from attnprof.workload.problem import Workload

__all__ = ["describe_probe", "render_limits"]


def describe_probe(variant: str, mode: str, field: str, probe: Probe) -> Text:
    """One line per probe while the search runs."""
    line = Text(f"  {variant} {mode} {field}={probe.size}: ")
    if probe.fits:
        return line.append(f"fits (peak {format_bytes(probe.peak_memory_bytes)})", style="green")
    if probe.status == "ok":  # ran, over the budget
        return line.append(f"does not fit ({probe.reason})", style="magenta")
    return line.append(probe.status, style="magenta")


def render_limits(ceilings: list[Ceiling], base: Workload, console: Console, *,
                  threads: str | None = None) -> None:
    """One row per variant and mode: the ceiling, what failed above it, the confirming
    run, and the textbook estimate with how far off it is; ``threads`` says what the runs
    had (:func:`attnprof.formatting.threads_text`)."""
    if not ceilings:
        return
    field, budget = ceilings[0].field, ceilings[0].budget_bytes
    others = (f"B={base.batch} " if field != "batch" else "") + (
        f"H={base.heads} KV={base.num_kv_heads} " + (f"S={base.seq} " if field != "seq" else "")
        + f"D={base.head_dim} {base.dtype} {base.device} {base.mask_label}")
    table = Table(title=f"attnprof limits — largest {field} that fits {format_bytes(budget)} "
                        f"· {others}", title_justify="left",
                  caption=f"{DEFINITION}; each probe is a real step in a fresh worker; "
                          "the largest size is confirmed by a final measured run"
                          + (f" · {threads}" if threads else ""),
                  caption_justify="left")
    table.add_column("variant", style="bold", no_wrap=True)
    table.add_column("mode", no_wrap=True)
    table.add_column(f"largest {field}", justify="right", no_wrap=True)
    table.add_column("first that did not fit", overflow="fold")
    table.add_column("confirmed run", no_wrap=True)
    table.add_column("textbook estimate", justify="right", no_wrap=True)
    table.add_column("estimate vs measured", overflow="fold")
    table.add_column("runs", justify="right", no_wrap=True)
    for c in ceilings:
        if c.unsupported:
            table.add_row(Text(c.variant), c.mode, "—", Text(f"unsupported: {c.unsupported}"),
                          "—", "—", "—", "0")
            continue
        table.add_row(Text(c.variant), c.mode, _largest(c), _failure(c), _confirmed(c),
                      str(c.analytic) if c.analytic else "—", _versus(c), str(len(c.probes)))
    console.print(table)


def _largest(c: Ceiling) -> Text:
    if c.largest is None:
        return Text(f"< {c.search[0]}", style="red")
    if c.first_failure is None:
        return Text(f"≥ {c.largest}", style="green")
    return Text(str(c.largest), style="green")


def _failure(c: Ceiling) -> Text:
    f = c.first_failure
    if f is None:
        return Text(f"none up to {c.search[1]} (the search's end; raise --max)", style="dim")
    if f.status == "ok":  # ran, over the budget
        return Text(f"{f.size}: {f.reason}")
    return Text(f"{f.size}: {f.status}" + (f" — {f.reason}" if f.status != "oom" else ""))


def _confirmed(c: Ceiling) -> str:
    row = c.confirmed
    if row is None:
        return "—"
    lat = row.latency_ms
    return f"{fmt_ms(lat.median if lat else None)} ms, peak {format_bytes(row.peak_memory_bytes)}"


def _versus(c: Ceiling) -> Text:
    if c.analytic is None:
        return Text("the estimate fits nothing", style="dim")
    ratio = c.analytic_ratio
    if ratio is None:
        if c.largest is not None and c.analytic > c.largest:
            return Text(f"beyond the search's end ({c.search[1]}): not compared", style="dim")
        return Text("—")
    if abs(ratio - 1) < 0.05:
        return Text("within 5%", style="green")
    word = "too optimistic" if ratio > 1 else "too pessimistic"
    return Text(f"{ratio:.2f}× the measured: {abs(ratio - 1):.0%} {word}",
                style="yellow" if abs(ratio - 1) > 0.25 else "")
