"""The sections of the record kinds that compare runs rather than measure one: a rank set
(``analyze`` of a distributed run's traces) and a diff (``attnprof diff``)."""

from __future__ import annotations

from attnprof.formatting import format_us
from attnprof.record.diff import DiffRecord
from attnprof.record.ranks import RanksRecord
from attnprof.render.html.page import Section, Table, cell, num

__all__ = ["diff_section", "ranks_section"]


def _share(value: float | None) -> str | None:
    return None if value is None else f"{value:.0%}"


def ranks_section(record: RanksRecord, anchor: str) -> Section:
    """One row per rank, the straggler of each step, the cross-rank findings."""
    section = Section(kind="ranks", title=f"attnprof analyze — {len(record.ranks)} ranks"
                      + (f" of {record.world_size}" if record.world_size else ""),
                      anchor=anchor)
    section.facts += [("executor", record.executor), ("workers", str(record.workers or "—"))]
    ranks = Table(name=f"{anchor}-ranks", caption="one row per rank",
                  columns=["rank", "trace", "device", "events", "kernels per step",
                           "CPU per step", "attention share", "SDPA backend", "error"])
    for r in record.ranks:
        ranks.rows.append([num(r.rank, None if r.rank is None else str(r.rank)), cell(r.source),
                           cell(r.device), num(r.events), num(r.kernels_per_step),
                           num(r.cpu_us_per_step, format_us(r.cpu_us_per_step)),
                           num(r.attention_share, _share(r.attention_share)),
                           cell(r.sdpa_backend), cell(r.error or "", "status-error"
                                                       if r.error else "")])
        ranks.row_css.append("row-error" if r.error else "row-ok")
    section.tables.append(ranks)
    steps = Table(name=f"{anchor}-steps", caption="the straggler of each step: the rank the "
                  "others waited for in their collectives",
                  columns=["step", "straggler", "its collectives", "others' (median)",
                           "extra"])
    for s in record.steps:
        steps.rows.append([num(s.step), num(s.straggler),
                           num(s.straggler_collective_us, format_us(s.straggler_collective_us)),
                           num(s.others_collective_us, format_us(s.others_collective_us)),
                           num(s.extra_us, format_us(s.extra_us))])
    section.tables.append(steps)
    section.findings = [("ranks", f) for f in record.findings]
    section.notes += record.notes
    return section


def diff_section(record: DiffRecord, anchor: str) -> Section:
    """The facts that changed, every row's metrics with their verdict, and the traces'
    kernel changes."""
    section = Section(kind="diff", title=f"attnprof diff — {record.old.ref} → {record.new.ref}",
                      anchor=anchor)
    section.facts += [("old", f"{record.old.ref} ({record.old.kind})"),
                      ("new", f"{record.new.ref} ({record.new.kind})"),
                      ("significance", f"alpha {record.alpha:g}, {record.correction} correction")]
    changes = Table(name=f"{anchor}-changes", caption="what changed between the runs",
                    columns=["scope", "what", "old", "new"])
    for c in record.changes:
        changes.rows.append([cell(c.scope), cell(c.what), cell(c.old), cell(c.new)])
    section.tables.append(changes)
    rows = Table(name=f"{anchor}-rows", caption="every row and metric: significant or ~",
                 columns=["row", "state", "metric", "old", "new", "change", "p (adjusted)",
                          "verdict"])
    for r in record.rows:
        key = " · ".join(f"{k}={v}" for k, v in r.key.items())
        for m in r.metrics or [None]:  # type: ignore[list-item]
            if m is None:
                rows.rows.append([cell(key), cell(r.state), cell("—"), num(None), num(None),
                                  num(None), num(None), cell(r.reason)])
                rows.row_css.append(f"row-{r.state}")
                continue
            verdict = ("worse" if m.worse else "better") if m.significant else (
                f"not judged ({m.not_judged})" if m.not_judged else "~")
            rows.rows.append([
                cell(key), cell(r.state), cell(f"{m.metric} ({m.unit})" if m.unit else m.metric),
                num(m.old, None if m.old is None else f"{m.old:.4g}"),
                num(m.new, None if m.new is None else f"{m.new:.4g}"),
                num(m.change, None if m.change is None else f"{m.change:+.1%}"),
                num(m.p_adjusted, None if m.p_adjusted is None else f"{m.p_adjusted:.3g}"),
                cell(verdict, "status-error" if verdict == "worse" else
                     "status-ok" if verdict == "better" else "")])
            rows.row_css.append("row-error" if verdict == "worse" else "")
    section.tables.append(rows)
    for i, trace in enumerate(record.traces):
        for j, region in enumerate(trace.regions):
            kernels = Table(name=f"{anchor}-trace{i}-region{j}",
                            caption=f"{region.old_name} → {region.new_name}: per forward",
                            columns=["name", "what", "old", "new", "state"])
            for k in [*region.kernels, *region.ops, *region.launches]:
                kernels.rows.append([cell(k.name), cell(k.what), num(k.old_per_forward),
                                     num(k.new_per_forward), cell(k.state)])
            section.tables.append(kernels)
        section.notes += [f"finding appeared: {f}" for f in trace.findings_appeared]
        section.notes += [f"finding gone: {f}" for f in trace.findings_gone]
    return section
