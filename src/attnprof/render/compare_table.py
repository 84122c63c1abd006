"""The comparison table (and, when the run traced its variants, what the traces show),
printed with rich. Formats only; computes nothing."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.formatting import fmt_ms, fmt_rate, format_bytes, threads_text
from attnprof.record.compare import CompareRecord, PaddingWaste, VariantResult
from attnprof.render.styles import SEVERITY_STYLE, STATUS_STYLE, error_text
from attnprof.variants.base import Variant

#: What each CPU allocator state means, as the footer says it (see measure.allocator).
_ALLOCATOR_STATES = {"reuse": "freed memory is reused, as CUDA's caching allocator does",
                     "fresh": "new pages every call, first touch paid each time",
                     "system": "malloc left as the process found it"}


def _with_share(rate: float | None, share: float | None) -> Text:
    """``0.0609 (51%)``: the rate and its share of the machine's measured ceiling; a share
    above 100% is marked (``(1943%)!``), its row's notes say why it cannot be read."""
    text = fmt_rate(rate)
    if share is None:
        return Text(text)
    if share > 1:
        return Text(f"{text} ({share:.0%})!", style="bold yellow")
    return Text(f"{text} ({share:.0%})")


def traffic_text(r: VariantResult) -> str:
    """``50.3 MiB 19×floor``: the variant's traffic and its multiple of the I/O floor."""
    if r.traffic_bytes is None:
        return "—"
    text = format_bytes(int(r.traffic_bytes))
    if r.bytes_moved:
        text += f" {r.traffic_bytes / r.bytes_moved:.3g}×floor"
    return text


def io_floor_line(record: CompareRecord) -> str | None:
    """The footer's line naming the I/O floor and what the traffic and GB/s are."""
    floors = {r.bytes_moved for r in record.results if r.bytes_moved}
    if not floors:
        return None
    floor = format_bytes(int(max(floors)))
    said = (f"I/O floor: {floor} a step (Q, K, V read and O written once; gradients in "
            "training), what any variant must move")
    if any(r.traffic_bytes is not None for r in record.results):
        said += ("; traffic: the bytes a variant's ops read and wrote, modelled from their "
                 "recorded shapes and dtypes (each input read once, each output written "
                 "once; leaf ops only), not a counter reading; GB/s and bound by: over "
                 "the traffic")
    if any(r.gbytes_basis == "I/O floor" for r in record.results if r.gbytes_per_s):
        said += ("; rows without traffic (a compiled graph's kernels record no ops; no "
                 "memory phase): GB/s over the I/O floor")
    return said


def fmt_error(r: VariantResult) -> Text:
    return error_text(r.max_abs_error, r.within_tolerance, r.tolerance, r.nonfinite_values)


def _spread(r: VariantResult) -> Text:
    lat = r.latency_ms
    if lat is None or lat.median <= 0:
        return Text("—")
    text = Text(f"{100 * lat.iqr / lat.median:.1f}%")
    if lat.noisy:
        text.stylize("yellow")
        text.append(" noisy", style="yellow")
    return text


def row_notes(r: VariantResult) -> str:
    """A row's notes cell, as the terminal and the HTML report both show it."""
    # A row that failed says why first; one that failed after measuring (a kept latency)
    # or that changed torch's settings says that too, in its notes.
    parts = [r.reason] if r.status != "ok" and r.reason else []
    if r.latency_ms is None:
        return "; ".join([*parts, *r.notes])
    if r.sdpa_backend:
        parts.append(f"ran {r.sdpa_backend}")
    if r.bound_by is not None:
        parts.append(f"{r.bound_by}-bound (roofline)")
    elif r.gbytes_basis == "I/O floor" and r.gbytes_per_s is not None:
        parts.append("traffic not modelled: GB/s over the I/O floor")
    if r.compile_time_s is not None:
        parts.append(f"compile {r.compile_time_s:.1f} s (not in latency)")
    if r.minor_faults_per_call is not None and r.minor_faults_per_call >= 1:
        # First-touch memory paid on every call: the allocator state decides it (settings).
        parts.append(f"{r.minor_faults_per_call:,.0f} page faults per call")
    parts.extend(r.notes)
    return "; ".join(parts)


def render_compare(record: CompareRecord, console: Console) -> None:
    """Print the comparison table with its workload, environment and conventions."""
    workload, env = record.workload_spec(), record.environment
    cuda = any(r.timing == "cuda-events" for r in record.results)
    # Titles and captions are parsed as markup unless they are Text: the environment is data.
    # A profile record is a comparison too: the title names the command that made it.
    table = Table(title=Text(f"attnprof {record.kind} — {workload.describe()}"),
                  title_justify="left",
                  caption=Text(f"{env.device_name} · {threads_text(env.threads, env.cpus)} · torch "
                               f"{env.torch} · attnprof {env.attnprof}"),
                  caption_justify="left")
    # A terminal too narrow for every column (80: a pipe, a CI log) gets the rates in a
    # second table and the notes below, one line a variant, rather than columns folded to
    # a letter a line.
    narrow = console.width < _ONE_TABLE_WIDTH
    rates = Table(title="rates", title_justify="left") if narrow else table
    table.add_column("variant", style="bold", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("median ms", justify="right", no_wrap=True)
    table.add_column("IQR", justify="right", no_wrap=True)
    if cuda:
        table.add_column("CPU dispatch ms", justify="right")
    if narrow:
        rates.add_column("variant", style="bold", no_wrap=True)
    rates.add_column("TFLOP/s", justify="right")
    rates.add_column("GB/s", justify="right")
    rates.add_column("traffic", justify="right")
    table.add_column("peak mem", justify="right", no_wrap=True)
    table.add_column("max err", justify="right", no_wrap=True)
    if not narrow:
        table.add_column("notes", overflow="fold", ratio=1)
    below: list[Text] = []
    for r in record.results:
        lat = r.latency_ms
        # Variant names and reasons come from users and PyTorch: Text, never rich markup.
        row: list[Text | str] = [
            Text(r.variant), Text(r.status, style=STATUS_STYLE.get(r.status, "")),
            fmt_ms(lat.median if lat else None), _spread(r)]
        if cuda:
            row.append(fmt_ms(r.cpu_dispatch_ms))
        rated: list[Text | str] = [_with_share(r.tflops_per_s, r.flops_of_ceiling),
                 _with_share(r.gbytes_per_s, r.bandwidth_of_ceiling), traffic_text(r)]
        measured: list[Text | str] = [format_bytes(r.peak_memory_bytes), fmt_error(r)]
        if narrow:
            table.add_row(*row, *measured)
            if r.status == "ok":
                rates.add_row(Text(r.variant), *rated)
            if notes := row_notes(r):
                below.append(Text.assemble((r.variant, "bold"), f": {notes}"))
        else:
            table.add_row(*row, *rated, *measured, Text(row_notes(r)))
    console.print(table)
    if narrow and rates.row_count:
        console.print(rates)
    if below:
        console.print(Text("notes", style="bold"))
        for line in below:
            console.print(line)
    _footer(record, console)


#: The narrowest terminal that gets the comparison as one table, notes included.
_ONE_TABLE_WIDTH = 150


def _footer(record: CompareRecord, console: Console) -> None:
    timed = {r.timing for r in record.results if r.timing}
    how = "CUDA events (device time, L2 flushed between samples)" if "cuda-events" in timed \
        else "wall clock per call"
    memory = {r.peak_memory_method for r in record.results if r.peak_memory_method}
    lines = [f"latency: median over the samples, {how}; IQR/median > 10% is marked noisy",
             f"FLOPs: {record.flops_convention}"]
    if (floor := io_floor_line(record)) is not None:
        lines.append(floor)
    if record.ceilings is not None:
        c = record.ceilings
        when = f"measured {c.measured} (attnprof env)" if c.measured else "measured in this run"
        lines.append(f"(%): share of this machine's ceilings, {when}: matmul "
                     f"{fmt_rate(c.matmul_tflops_per_s)} TFLOP/s, copy "
                     f"{fmt_rate(c.bandwidth_gbytes_per_s)} GB/s ({c.method})")
    if memory:
        lines.append(f"peak mem: {', '.join(sorted(memory))}; max err: max |out − float64 "
                     "reference| on the same inputs")
    if (waste := record.padding_waste) is not None:
        lines.append(padding_line(waste))
    if "wall" in timed:
        lines.append(f"CPU allocator: {record.settings.cpu_allocator} "
                     f"({_ALLOCATOR_STATES.get(record.settings.cpu_allocator, '')}); "
                     "--cpu-allocator fresh|reuse|system measures another state")
    for line in lines:  # record text: Text, never markup
        console.print(Text(line, style="dim"))
    if record.status != "complete":
        console.print("[yellow]run incomplete: only the rows above finished[/yellow]")


def padding_line(waste: PaddingWaste) -> str:
    """The padding waste of a padded batch, as the footer says it."""
    text = (f"padding waste: {waste.real_tokens:,} real of {waste.padded_tokens:,} padded "
            f"tokens; {waste.flops_share:.0%} of the padded call's FLOPs are on padding")
    if waste.time_ms is not None and waste.padded_ms is not None:
        share = f" ({waste.time_share:.0%})" if waste.time_share is not None else ""
        text += (f"; time {fmt_ms(waste.time_ms)} ms{share}: {waste.padded_variant} "
                 f"{fmt_ms(waste.padded_ms)} ms padded vs {waste.unpadded_variant} "
                 f"{fmt_ms(waste.unpadded_ms)} ms unpadded ({waste.method})")
    elif waste.note:
        text += f"; {waste.note}"
    return text


def render_variant_list(variants: list[Variant], console: Console) -> None:
    """The registry as a table (``--list-variants``)."""
    table = Table(title="attnprof variants", title_justify="left")
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("family", no_wrap=True)
    table.add_column("what it runs")
    for v in variants:
        table.add_row(Text(v.name), Text(v.family), Text(v.summary))
    console.print(table)
    console.print("[dim]or any SDPA-compatible callable: path/to/file.py:name or "
                  "package.module:name[/dim]")


def render_findings_by_variant(record: CompareRecord, console: Console) -> None:
    """Under a comparison: each traced variant's warnings in one line apiece.

    The full explanation (tables, evidence, fixes) is ``attnprof analyze`` of the trace;
    this is the part that changes a choice between variants.
    """
    traced = [r for r in record.results if r.analysis is not None]
    if not traced:
        return
    table = Table(title="what the traces show (warnings and worse; details: attnprof "
                        "analyze TRACE)", title_justify="left")
    table.add_column("variant", style="bold", no_wrap=True)
    table.add_column("findings", overflow="fold", ratio=1)
    for row in traced:
        assert row.analysis is not None
        serious = [f for f in row.analysis.findings if f.severity != "info"]
        cell = Text()
        for f in serious:
            if cell:
                cell.append("\n")
            cell.append(f"{f.severity} ", style=SEVERITY_STYLE.get(f.severity, ""))
            cell.append(f"{f.title} ({f.rule})")
        if not serious:
            cell.append("no warnings", style="green")
        table.add_row(Text(row.variant), cell)
    console.print(table)
