"""The terminal view of a model record: what the model is and which modules were taken as
attention, one line per run, then each run's per-layer table, the implementations side
by side per layer, and the KV cache in decode. Formats only: every number is a field of
the record.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.formatting import format_bytes, format_us, threads_text
from attnprof.record.diff import ALPHA
from attnprof.record.model import ModelRecord, PhaseRun
from attnprof.render.model_attribution import (
    render_attribution,
    render_model_findings,
    share_text,
)
from attnprof.render.styles import STATUS_STYLE, error_text

__all__ = ["render_model"]


def _ms(value: float | None) -> str:
    return "—" if value is None else format_us(value * 1e3)


def render_model(record: ModelRecord, console: Console, top: int) -> None:
    """The whole view of a model record."""
    _summary(record, console)
    _runs(record, console)
    for run in record.runs:
        if run.attribution is not None:
            console.print()
            render_attribution(run.attribution, console, top=max(top, 1) * 4,
                               title=f"{run.implementation} · {run.phase} — per layer")
            render_model_findings([f for f in run.attribution.findings
                                   if f.severity != "info"], console)
    _deltas(record, console)
    _kv_cache(record, console)
    if record.status != "complete":
        console.print("[yellow]run incomplete: only the runs above finished[/yellow]")


def _summary(record: ModelRecord, console: Console) -> None:
    m, env = record.model, record.environment
    sizes = ", ".join(f"{v} {k}" for k, v in (
        ("layers", m.layers), ("hidden", m.hidden), ("heads", m.heads),
        ("kv heads", m.kv_heads), ("head dim", m.head_dim)) if v is not None)
    text = Text(f"attnprof model — {m.source}", style="bold")
    text.append(f"\n{m.architecture} ({m.family}), {m.parameters / 1e6:.1f}M parameters, "
                f"{m.weights} weights" + (f"; {sizes}" if sizes else ""))
    if m.input_shape:
        shape = f", input {' × '.join(map(str, m.input_shape))}"
    elif m.batch is not None and m.seq is not None:
        shape = f", batch × seq {m.batch} × {m.seq}"
    else:
        shape = f", batch {m.batch}" if m.batch is not None else ""
    positions = ("" if m.positions is None else f"; positions: up to {m.max_positions:,} "
                 f"({m.positions})" if m.max_positions is not None
                 else f"; positions: {m.positions}")
    text.append(f"\n{m.dtype} on {env.device_name} ({threads_text(env.threads, env.cpus)}){shape}"
                + (f"; built with attn_implementation {m.default_implementation}"
                   if m.default_implementation else "") + positions, style="dim")
    console.print(text)
    # One line per kind of module, whatever layer it sits in: the reason names a path
    # inside the module (BERT's ``...attention.self``), told apart only by the layer index.
    groups: dict[tuple[str, str, str], list[str]] = {}
    for a in record.attention:
        how = a.recognised_by.replace(a.path, _numbered(a.path)) if a.path else a.recognised_by
        groups.setdefault((a.cls, how, a.kind), []).append(a.path)
    for (cls, how, kind), paths in groups.items():
        where = paths[0] if len(paths) == 1 else f"{paths[0]} … {paths[-1]}"
        console.print(Text(f"attention: {cls} ×{len(paths)} ({where})"
                           + (f", {kind}-attention" if kind != "self" else "") + f" — {how}"))


def _numbered(path: str) -> str:
    """``encoder.layer.3.attention`` -> ``encoder.layer.N.attention``."""
    return ".".join("N" if part.isdigit() else part for part in path.split("."))


def _runs(record: ModelRecord, console: Console) -> None:
    table = Table(title="runs", title_justify="left")
    ranked = any(r.versus is not None for r in record.runs)
    for name, justify in (("attention", "left"), ("phase", "left"), ("status", "left"),
                          ("ms / step", "right"), *((("rank", "left"),) if ranked else ()),
                          ("tokens/s", "right"),
                          ("peak mem", "right"), ("attention modules", "right"),
                          ("attention time", "right"), ("SDPA backend", "left"),
                          ("max diff", "right"), ("labels cost", "right"),
                          ("notes", "left")):
        table.add_column(name, justify=justify,
                         overflow="fold", ratio=1 if name == "notes" else None,
                         no_wrap=name in ("labels cost", "rank"))
    for r in record.runs:
        lat = r.latency_ms
        table.add_row(Text(r.implementation), r.phase,
                      Text(r.status, style=STATUS_STYLE.get(r.status, "")),
                      _ms(lat.median if lat else None),
                      *((rank_text(r),) if ranked else ()),
                      f"{r.tokens_per_s:,.0f}" if r.tokens_per_s else "—",
                      format_bytes(r.peak_memory_bytes),
                      share_text(r.attention_share, r.shares_unreliable),
                      share_text(r.attention_time_share, r.shares_unreliable),
                      Text(r.sdpa_backend or "—"),
                      error_text(r.max_abs_diff, r.within_tolerance),
                      _labels_cost(r), Text(_notes(r)))
    console.print(table)
    console.print("[dim]ms / step: median, labels off; attention modules: their share of "
                  "the traced step's time, projections included; attention time: the core's "
                  "forward + backward, of the step's op time (the figure analyze, diff and the "
                  "ranks view report); "
                  "labels cost: the same step with attnprof's labels on (profiler off), "
                  "median over the interleaved rounds (lowest … highest); max diff: max |out − "
                  "reference| / max(1, max |reference|) on the same weights and inputs[/dim]")
    if ranked:
        rounds = max(r.versus.rounds for r in record.runs if r.versus is not None)
        console.print(f"[dim]rank: the phase's implementations timed in the same {rounds} "
                      "interleaved rounds, each against the fastest: ranked when the "
                      f"samples differ (Mann-Whitney U, p ≤ {ALPHA:g}) and the medians by "
                      "more than the noise (5%, or the samples' relative IQR when larger); "
                      "tie otherwise[/dim]")
    if any(r.shares_unreliable for r in record.runs):
        console.print("[yellow]shares marked ? are unreliable (every capture of the run was "
                      "noisy, or its steps disagree): why, under each run's per-layer "
                      "table; exit status 3[/yellow]")
    _attention_calls(record, console)


def rank_text(r: PhaseRun) -> str:
    """``1 (fastest)``, ``tie (p=0.69)``, ``tie (p=0.001; 1.03× within ±5%)`` or
    ``2: 1.21× sdpa (p=0.0001)``."""
    v = r.versus
    if v is None:
        return "—"
    if v.verdict == "fastest":
        return "1 (fastest)"
    p = f"p={v.p_value:.2g}" if v.p_value is not None else "p=?"
    if v.verdict == "tie":
        if v.p_value is not None and v.p_value <= ALPHA and v.margin is not None:
            return f"tie ({p}; {v.ratio:.2f}× within ±{v.margin:.0%})"
        return f"tie ({p})"
    return f"{v.rank}: {v.ratio:.2f}× {v.fastest} ({p})"


def _attention_calls(record: ModelRecord, console: Console) -> None:
    """Per phase: the attention core's FLOPs per step, and each sliding window — where the
    mask applied it and what it removed (from the first run of the phase that has calls)."""
    first: dict[str, PhaseRun] = {}
    for r in record.runs:
        if r.calls and r.phase not in first:
            first[r.phase] = r
    if not first:
        return
    flops = ", ".join(f"{phase} {_flops(r.core_flops)}" for phase, r in first.items())
    convention = next(iter(first.values())).flops_convention
    console.print(Text(f"attention core FLOPs per step: {flops} ({convention})",
                       style="dim"))
    for phase, run in first.items():
        groups: dict[tuple[object, ...], list[str]] = {}
        for c in run.calls:
            if c.window is not None:
                key = (c.window, c.window_applied, c.window_pairs, c.full_pairs,
                       c.window_saves, c.q_len, c.k_len)
                groups.setdefault(key, []).append(c.layer or c.module)
        for (window, applied, kept, full, saves, q, k), layers in groups.items():
            where = (f"{len(layers)} of {len(run.calls)} attention calls "
                     f"({layers[0]}{' … ' + layers[-1] if len(layers) > 1 else ''})")
            pairs = f"{kept:,} of {full:,} (query, key) pairs at {q}×{k}"
            if applied is False:
                console.print(Text(f"sliding window {window} declared in {where} · {phase}: "
                                   "NOT applied — the mask admitted more keys per query; "
                                   f"FLOPs count {pairs}", style="yellow"))
            elif not saves:
                console.print(Text(f"sliding window {window} in {where} · {phase}: excludes "
                                   f"nothing at these lengths ({pairs})", style="dim"))
            else:
                seen = "seen in the mask" if applied else "no mask to read; from the config"
                console.print(Text(f"sliding window {window} applied in {where} · {phase} "
                                   f"({seen}): each query sees at most {window} keys; "
                                   f"{pairs}, {saves:.0%} fewer; FLOPs count only these",
                                   style="dim"))


def _flops(n: float | None) -> str:
    if n is None:
        return "—"
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} FLOP"


def _labels_cost(r: PhaseRun) -> str:
    """The labels' cost with its spread over the rounds: never a bare figure."""
    if r.instrumentation_overhead is None:
        return "—"
    text = f"{r.instrumentation_overhead:+.1%}"
    if r.instrumentation_overhead_range:
        low, high = r.instrumentation_overhead_range
        text += f" ({low * 100:+.1f} … {high:+.1%})" if low < high else " (one round)"
    return text


def _notes(r: PhaseRun) -> str:
    if r.status != "ok":
        return r.reason
    parts = []
    if r.reference and r.max_abs_diff is not None:
        parts.append(f"vs {r.reference}")
    if r.latency_ms is not None and r.latency_ms.noisy:
        parts.append("noisy")
    if r.shares_unreliable:
        parts.append("shares unreliable (why: under the run's per-layer table)")
    parts.extend(r.notes)
    return "; ".join(parts)


def _deltas(record: ModelRecord, console: Console) -> None:
    if not record.deltas:
        return
    phases = list(dict.fromkeys(d.phase for d in record.deltas))
    for phase in phases:
        rows = [d for d in record.deltas if d.phase == phase]
        impls = list(dict.fromkeys(d.implementation for d in rows))
        ref = rows[0].reference
        table = Table(title=f"attention per layer against {ref} · {phase}",
                      title_justify="left")
        table.add_column("layer", style="bold")
        table.add_column(ref, justify="right")
        for impl in impls:
            table.add_column(impl, justify="right")
        for layer in dict.fromkeys(d.layer for d in rows):
            mine = {d.implementation: d for d in rows if d.layer == layer}
            base = next(iter(mine.values())).reference_attention_us
            cells = [format_us(base)]
            for impl in impls:
                d = mine.get(impl)
                cells.append("—" if d is None else f"{format_us(d.attention_us)} "
                             f"({'—' if d.ratio is None else f'{d.ratio:.2f}x'})")
            table.add_row(Text(layer), *cells)
        console.print(table)


def _kv_cache(record: ModelRecord, console: Console) -> None:
    runs = [r for r in record.runs if r.kv_cache is not None]
    if not runs:
        return
    table = Table(title="KV cache in decode (per sequence)", title_justify="left")
    for name in ("attention", "kind", "tokens", "computed / token", "per layer",
                 "measured growth / token", "held: computed", "held: measured",
                 "ms / token", "peak mem / step"):
        table.add_column(name, justify="left" if name in ("attention", "kind") else "right")
    for r in runs:
        kv = r.kv_cache
        assert kv is not None
        table.add_row(Text(r.implementation), "self", str(kv.cache_len),
                      format_bytes(kv.computed_bytes_per_token),
                      format_bytes(kv.computed_bytes_per_token_per_layer),
                      format_bytes(kv.measured_bytes_per_token),
                      format_bytes(kv.computed_cache_bytes),
                      format_bytes(kv.measured_cache_bytes),
                      _ms(r.latency_ms.median if r.latency_ms else None),
                      format_bytes(r.peak_memory_bytes))
        if (x := kv.cross) is not None:
            table.add_row(Text(r.implementation), "cross", str(x.encoder_len),
                          format_bytes(x.computed_bytes_per_token),
                          format_bytes(x.computed_bytes_per_token_per_layer),
                          format_bytes(x.measured_bytes_per_token),
                          format_bytes(x.computed_bytes), format_bytes(x.measured_bytes),
                          "", "")
    console.print(table)
    kv0 = runs[0].kv_cache
    assert kv0 is not None
    said = (f"  self: {kv0.formula} per token, grown by {kv0.new_tokens} new tokens after "
            f"{kv0.cache_len} cached")
    if kv0.cross is not None:
        said += (f"; cross: the encoder output's keys and values, {kv0.cross.formula}, made "
                 "once per sequence and read by every step (it does not grow)")
        if kv0.measured_total_bytes is not None:
            said += f"; both held: {format_bytes(kv0.measured_total_bytes)}"
    console.print(Text(said, style="dim"))
