"""The diff record (kind ``diff``): what changed between two runs, or two traces, and
whether it is more than noise.

A :class:`DiffRecord` compares an *old* and a *new* side (:class:`DiffSide`: a stored run,
a record file, a trace). Records are matched row by row (:class:`RowDiff`: a variant, a
sweep point's variant, a model's implementation and phase, or one layer of it), each
metric old against new (:class:`MetricChange`) with, where raw samples exist, a two-sided
Mann-Whitney U test and Holm's correction across rows. What changed around the numbers —
torch version, device, allocator state, workload — is listed first (:class:`Change`),
since it explains more differences than code does. Traces are compared region by region
(:class:`TraceDiff`): the kernels and ops per forward that appeared, went away or changed
count, time per kernel family and category, findings that appeared or went away.

Everything here is data written by :mod:`attnprof.analysis.diff`; renderers only format it.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from attnprof.record.base import Listing, RecordBase

__all__ = ["ALPHA", "ROW_STATES", "WATCHED_CHANGE", "Change", "CountChange", "CountState",
           "CountWhat", "DiffRecord", "DiffSide", "MetricChange", "RegionDiff", "RowDiff",
           "RowState", "TimeChange", "TraceDiff"]

#: The significance level of every test (benchstat's).
ALPHA = 0.05
#: The change a diff must be able to see: a row that cannot find one this large gets a
#: warning saying how many samples would (issue 19: a 10% regression).
WATCHED_CHANGE = 0.10

#: ``compared``: measured on both sides. ``broken``: measured before, failing now (the new
#: status says how: oom, error, unsupported ...). ``fixed``: failing before, measured now.
#: ``failing``: failing on both sides. ``added``/``removed``: on one side only.
RowState = Literal["compared", "broken", "fixed", "failing", "added", "removed"]
ROW_STATES: tuple[str, ...] = RowState.__args__  # type: ignore[attr-defined]


class DiffSide(msgspec.Struct, kw_only=True):
    """One side of a diff: what it was given as and what it is."""

    #: As the user named it: a run id, a label, a file.
    ref: str
    #: ``compare``, ``profile``, ``sweep``, ``model``, ``analyze`` or ``trace``.
    kind: str
    run_id: str | None = None
    label: str | None = None
    created: str | None = None
    source: str | None = None


class Change(msgspec.Struct, kw_only=True):
    """Something around the numbers that differs: ``what`` was ``old``, is ``new``."""

    #: ``environment``, ``workload``, ``settings`` or ``model``.
    scope: str
    what: str
    old: str
    new: str


class MetricChange(msgspec.Struct, kw_only=True):
    """One metric of one row, old against new.

    ``change`` is ``new / old - 1``. With raw samples on both sides, ``p_value`` is the
    two-sided Mann-Whitney U test's, ``p_adjusted`` Holm's across the diff's tested rows,
    and ``significant`` is ``p_adjusted < alpha``; ``detectable`` is False when the
    sample counts are too small for any difference to reach ``alpha``. Without samples
    (``n_old``/``n_new`` None): ``exact`` metrics (peak memory: one deterministic
    measurement) are significant when they differ at all; the rest are not judged
    (``significant`` None).
    """

    metric: str
    unit: str
    old: float | None
    new: float | None
    change: float | None
    n_old: int | None = None
    n_new: int | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    significant: bool | None = None
    detectable: bool | None = None
    #: The smallest relative change this row's sample counts and spread let the test find
    #: 4 times in 5 (at alpha over the diff's tests): a real change below it likely reads
    #: "~". ``None`` without samples.
    detectable_change: float | None = None
    #: Samples per side (processes per side, for a ``processes`` test) that would find a
    #: change of :data:`WATCHED_CHANGE` here.
    samples_needed: int | None = None
    #: The sides' robust relative spreads (IQR / 1.349 / median), pooled; for a test of
    #: process medians, the spread of those medians between processes.
    spread: float | None = None
    exact: bool = False
    #: Lower is better for every metric attnprof diffs except shares and throughput.
    higher_is_better: bool = False
    #: What ``p_value`` tested: ``samples`` (Mann-Whitney U on the raw samples of one
    #: process a side) or ``processes`` (Welch's t on the log medians of each side's
    #: processes, each process's own speed taken out when the record has four rows or
    #: more). ``None``: not tested.
    test: str | None = None
    #: Each process's median, when the side was measured in several (``--processes``).
    old_processes: list[float] = msgspec.field(default_factory=list)
    new_processes: list[float] = msgspec.field(default_factory=list)
    #: The change with each process's speed (the median of its rows against theirs
    #: over both sides) taken out: what a ``processes`` test judged. ``None``: not taken
    #: out (one process a side, or fewer than four rows).
    adjusted_change: float | None = None
    #: Why a tested metric was not judged after all (``significant`` None), e.g. "1
    #: process a side": every other row's latency moved the same way, which one process's
    #: samples cannot tell from the process's own speed.
    not_judged: str | None = None

    @property
    def grew_from_zero(self) -> bool:
        """An exact measurement that was 0 and is not now: growth with no ratio, judged in
        its unit (peak memory from 0 B to 32 MiB is growth, not "n/a")."""
        return self.exact and self.old == 0 and self.new is not None and self.new != 0

    @property
    def judged_change(self) -> float | None:
        """The change the test judged: beside the runs' speeds when it was taken out."""
        return self.adjusted_change if self.adjusted_change is not None else self.change

    @property
    def worse(self) -> bool:
        """A significant change in the bad direction."""
        change = self.judged_change
        if self.significant and change is None and self.grew_from_zero:
            change = self.new  # from zero: the sign of the growth in its unit
        if not self.significant or change is None:
            return False
        return change < 0 if self.higher_is_better else change > 0


class RowDiff(msgspec.Struct, kw_only=True):
    """One matched row: its key, its state and its metrics."""

    #: What identifies the row on both sides: ``{"variant": "sdpa"}``, ``{"seq": 1024,
    #: "mode": "forward", "variant": "flex"}``, ``{"implementation": "sdpa", "phase":
    #: "prefill", "layer": "layers.0"}`` ...
    key: dict[str, str | int]
    state: RowState
    old_status: str | None = None
    new_status: str | None = None
    #: The failing side's reason (the new one's when both fail).
    reason: str = ""
    metrics: list[MetricChange] = msgspec.field(default_factory=list)
    #: Facts that changed in the row (``sdpa backend: flash → math``).
    notes: list[str] = msgspec.field(default_factory=list)

    def metric(self, name: str) -> MetricChange | None:
        """The change of metric ``name``, if the row has it."""
        return next((m for m in self.metrics if m.metric == name), None)


#: How a name's count per forward changed: only in the new trace, only in the old one,
#: more or fewer per forward, or the same.
CountState = Literal["added", "removed", "more", "fewer", "same"]
#: What a counted name is: a kernel (a CPU trace's compute op), a CPU op or annotation, or
#: the runtime call that launched device work.
CountWhat = Literal["kernel", "op", "launch"]


class CountChange(msgspec.Struct, kw_only=True):
    """A kernel or op name: how often it ran per forward on each side, and its time."""

    name: str
    #: ``kernel`` (device kernel, copy or set; a CPU trace's compute op), ``op`` (CPU op or
    #: annotation) or ``launch`` (the runtime call that launched device work).
    what: CountWhat
    old_per_forward: float
    new_per_forward: float
    state: CountState
    old_us: float = 0.0
    new_us: float = 0.0
    family: str | None = None
    category: str | None = None


class TimeChange(msgspec.Struct, kw_only=True):
    """Time per forward of a kernel family or a category, old against new (µs); one
    capture each side, so not judged for significance."""

    name: str
    old_us: float
    new_us: float


class RegionDiff(msgspec.Struct, kw_only=True):
    """One region of the old trace against its match in the new one."""

    old_name: str
    new_name: str
    old_instances: int
    new_instances: int
    old_kernels_per_forward: float
    new_kernels_per_forward: float
    kernel_source: str
    #: Every kernel name of either side (changed ones first), per forward.
    kernels: list[CountChange] = msgspec.field(default_factory=list)
    #: Every CPU op and annotation name of either side, per forward.
    ops: list[CountChange] = msgspec.field(default_factory=list)
    #: Every launch API of either side (``cudaLaunchKernel``, ``cudaGraphLaunch`` ...).
    launches: list[CountChange] = msgspec.field(default_factory=list)
    families: list[TimeChange] = msgspec.field(default_factory=list)
    categories: list[TimeChange] = msgspec.field(default_factory=list)
    old_us_per_forward: float | None = None
    new_us_per_forward: float | None = None
    #: ``step`` when either side's region is of training steps, else ``forward``.
    unit: str = "forward"
    #: Attention's work per step (or forward), µs, each side, and by phase of a step
    #: (``forward``, ``backward``, ...; empty for forwards).
    old_attention_us: float | None = None
    new_attention_us: float | None = None
    old_attention_by_phase: dict[str, float] = msgspec.field(default_factory=dict)
    new_attention_by_phase: dict[str, float] = msgspec.field(default_factory=dict)

    def changed_kernels(self) -> list[CountChange]:
        """Kernels whose count per forward differs."""
        return [k for k in self.kernels if k.state != "same"]

    def changed_ops(self) -> list[CountChange]:
        """Ops whose count per forward differs."""
        return [o for o in self.ops if o.state != "same"]


class TraceDiff(msgspec.Struct, kw_only=True):
    """Two traces (or two reports of them) compared."""

    old_source: str
    new_source: str
    #: What a ``name`` of the pair is, e.g. the variant of a profile row.
    name: str | None = None
    regions: list[RegionDiff] = msgspec.field(default_factory=list)
    #: Regions of one side with no match on the other.
    unmatched_old: list[str] = msgspec.field(default_factory=list)
    unmatched_new: list[str] = msgspec.field(default_factory=list)
    #: Findings (``rule: title``) of the new trace not in the old, and the reverse.
    findings_appeared: list[str] = msgspec.field(default_factory=list)
    findings_gone: list[str] = msgspec.field(default_factory=list)


#: The diff header: the row's key (variant, or point coordinates and variant, or
#: implementation, phase and layer, as one text), its state, then one metric's figures.
DIFF_COLUMNS: tuple[str, ...] = (
    "key", "state", "old_status", "new_status", "metric", "unit", "old", "new", "change",
    "n_old", "n_new", "p_value", "p_adjusted", "significant", "detectable", "test",
    "adjusted_change", "processes_old", "processes_new", "reason", "old_run", "new_run")


class DiffRecord(RecordBase, tag="diff"):
    """``attnprof diff A B``: old against new."""

    old: DiffSide
    new: DiffSide
    alpha: float = ALPHA
    #: The correction for the many rows compared.
    correction: str = "holm"
    changes: list[Change] = msgspec.field(default_factory=list)
    rows: list[RowDiff] = msgspec.field(default_factory=list)
    traces: list[TraceDiff] = msgspec.field(default_factory=list)
    #: What the reader must know to trust the verdicts (too few samples, a workload that
    #: differs, files of a folder with no match ...).
    warnings: list[str] = msgspec.field(default_factory=list)

    def flat_table(self) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
        """The flat table (:mod:`attnprof.record.flat`): one line per row and metric."""
        return DIFF_COLUMNS, diff_lines(self)

    def headline(self) -> str:
        """What changed beyond noise: regressions and improvements (with the largest),
        rows that broke or were fixed, and the traces' kernel and finding changes."""
        return diff_headline(self)

    def subject(self) -> str:
        """The two sides."""
        return f"{self.old.ref} ({self.old.kind}) → {self.new.ref} ({self.new.kind})"

    def listing(self) -> Listing:
        """The two sides, and how many rows were compared."""
        return Listing(summary=f"{self.subject()}: {len(self.rows)} rows")


def _said(row: RowDiff, m: MetricChange) -> str:
    key = " ".join(f"{v}" for v in row.key.values())
    change = m.judged_change
    return f"{key} {m.metric} " + (f"{change:+.0%}" if change is not None else
                                   f"{m.old} → {m.new}")


def diff_headline(record: DiffRecord) -> str:
    """See :meth:`DiffRecord.headline`."""
    worse = [(r, m) for r in record.rows for m in r.metrics if m.significant and m.worse]
    better = [(r, m) for r in record.rows for m in r.metrics if m.significant and not m.worse]
    judged = [m for r in record.rows for m in r.metrics if m.not_judged is None]
    unjudged = [m.not_judged for r in record.rows for m in r.metrics if m.not_judged]
    said = []
    if worse:
        said.append(f"{len(worse)} regression{'s' if len(worse) > 1 else ''} beyond noise "
                    f"({'; '.join(_said(r, m) for r, m in worse[:3])}"
                    + ("; …" if len(worse) > 3 else "") + ")")
    if better:
        said.append(f"{len(better)} improvement{'s' if len(better) > 1 else ''} "
                    f"({'; '.join(_said(r, m) for r, m in better[:2])}"
                    + ("; …" if len(better) > 2 else "") + ")")
    if said:
        rest = len(judged) - len(worse) - len(better)
        text = ", ".join(said) + (f"; {rest} other metrics within noise." if rest > 0 else ".")
    elif record.rows:
        text = f"Nothing changed beyond noise in the {len(judged)} metrics judged."
    else:
        text = ""
    if unjudged:
        text += (f" {len(unjudged)} metric{'s' if len(unjudged) > 1 else ''} not judged "
                 f"({unjudged[0]}).")
    for state, verb in (("broken", "broke"), ("fixed", "was fixed"), ("added", "was added"),
                        ("removed", "was removed")):
        rows = [" ".join(str(v) for v in r.key.values()) for r in record.rows
                if r.state == state]
        if rows:
            text += (f" {len(rows)} row{'s' if len(rows) > 1 else ''} {verb}: "
                     f"{', '.join(rows[:3])}" + (" …" if len(rows) > 3 else "") + ".")
    if record.traces:
        kernels = sum(len(region.changed_kernels()) for t in record.traces
                      for region in t.regions)
        appeared = sum(len(t.findings_appeared) for t in record.traces)
        gone = sum(len(t.findings_gone) for t in record.traces)
        text += (f" Traces: {kernels} kernel count{'s' if kernels != 1 else ''} changed, "
                 f"{appeared} finding(s) appeared, {gone} gone.")
    return text.strip() or "Nothing to compare."


def diff_lines(record: DiffRecord) -> list[dict[str, Any]]:
    """A diff: one line per row and metric (one line for a row without metrics), then one
    per kernel, op and launch call of each compared trace region (metric ``per_forward``,
    the state ``added``, ``removed``, ``more``, ``fewer`` or ``same``)."""
    lines: list[dict[str, Any]] = []
    for row in record.rows:
        base = {"key": " ".join(f"{k}={v}" for k, v in row.key.items()), "state": row.state,
                "old_status": row.old_status, "new_status": row.new_status,
                "reason": row.reason, "old_run": record.old.run_id or record.old.ref,
                "new_run": record.new.run_id or record.new.ref}
        if not row.metrics:
            lines.append(base)
        for m in row.metrics:
            lines.append({**base, "metric": m.metric, "unit": m.unit, "old": m.old,
                          "new": m.new, "change": m.change, "n_old": m.n_old,
                          "n_new": m.n_new, "p_value": m.p_value, "p_adjusted": m.p_adjusted,
                          "significant": m.significant, "detectable": m.detectable,
                          "test": m.test, "adjusted_change": m.adjusted_change,
                          "processes_old": len(m.old_processes) or None,
                          "processes_new": len(m.new_processes) or None})
    runs = {"old_run": record.old.run_id or record.old.ref,
            "new_run": record.new.run_id or record.new.ref}
    for trace in record.traces:
        where = trace.name or f"{trace.old_source} -> {trace.new_source}"
        for region in trace.regions:
            for c in (*region.kernels, *region.ops, *region.launches):
                lines.append({
                    "key": f"trace={where} region={region.new_name} {c.what}={c.name}",
                    "state": c.state, "metric": "per_forward", "unit": "count",
                    "old": c.old_per_forward, "new": c.new_per_forward,
                    "change": (c.new_per_forward / c.old_per_forward - 1.0
                               if c.old_per_forward else None), **runs})
    return lines
