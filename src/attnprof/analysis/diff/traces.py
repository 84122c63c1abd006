"""Two trace reports compared region by region: attention's time per step (or forward)
and, for training steps, in their forward and backward; the kernels and ops per forward that
appeared, went away or changed count, time per kernel family and category, and the
findings that appeared or went away.

Regions match by name; when each side has exactly one region left over (the region of
``attnprof::naive`` against ``attnprof::naive-inplace``), those two are compared. Counts
are per forward (a region's count over its instances), so traces of 3 and 5 profiled
steps compare; a kernel name seen with several launch paths is one entry. What HTA's
TraceDiff calls added and deleted ops are this diff's ``added`` and ``removed`` kernels
and ops (``tests/diff/test_trace_diff.py`` checks both agree on HTA's own trace pair).
"""

from __future__ import annotations

from collections.abc import Iterable

from attnprof.record.diff import (
    CountChange,
    CountState,
    CountWhat,
    RegionDiff,
    TimeChange,
    TraceDiff,
)
from attnprof.record.trace_report import RegionReport, TraceReport

__all__ = ["diff_regions", "diff_reports", "match_regions", "pair_files"]

#: Per-forward counts closer than this are equal (they are ratios of integers).
_SAME = 1e-9


def diff_reports(old: TraceReport, new: TraceReport, name: str | None = None) -> TraceDiff:
    """``old`` against ``new``: every matched region, and the findings."""
    pairs, lone_old, lone_new = match_regions(old.regions, new.regions)
    # A finding is the same one when its rule fires in matched regions.
    gone = _findings(old, {})
    appeared = _findings(new, {b.name: a.name for a, b in pairs})
    return TraceDiff(old_source=old.source, new_source=new.source, name=name,
                     regions=[diff_regions(a, b) for a, b in pairs],
                     unmatched_old=[r.name for r in lone_old],
                     unmatched_new=[r.name for r in lone_new],
                     findings_appeared=[t for k, t in appeared.items() if k not in gone],
                     findings_gone=[t for k, t in gone.items() if k not in appeared])


def pair_files(old: list[str], new: list[str]
               ) -> tuple[list[tuple[int, int]], list[str]]:
    """Traces of two folders (or two analyses) paired: by file name, and the one file left
    on each side with each other; the positions of each pair, and the names left over."""
    import os

    names_old = [os.path.basename(p) for p in old]
    names_new = [os.path.basename(p) for p in new]
    where = {n: j for j, n in enumerate(names_new)}
    pairs = [(i, where[n]) for i, n in enumerate(names_old) if n in where]
    lone_old = [i for i, n in enumerate(names_old) if n not in where]
    taken = set(names_old)
    lone_new = [j for j, n in enumerate(names_new) if n not in taken]
    if len(lone_old) == 1 and len(lone_new) == 1:
        return [*pairs, (lone_old[0], lone_new[0])], []
    return pairs, [names_old[i] for i in lone_old] + [names_new[j] for j in lone_new]


def match_regions(old: list[RegionReport], new: list[RegionReport]
                  ) -> tuple[list[tuple[RegionReport, RegionReport]], list[RegionReport],
                             list[RegionReport]]:
    """Pairs of regions by name, then the one region left on each side, if so."""
    by_name = {r.name: r for r in new}
    pairs = [(r, by_name[r.name]) for r in old if r.name in by_name]
    lone_old = [r for r in old if r.name not in by_name]
    matched = {r.name for r in old}
    lone_new = [r for r in new if r.name not in matched]
    if len(lone_old) == 1 and len(lone_new) == 1:
        pairs.append((lone_old[0], lone_new[0]))
        lone_old, lone_new = [], []
    return pairs, lone_old, lone_new


def diff_regions(old: RegionReport, new: RegionReport) -> RegionDiff:
    """One region against another."""
    return RegionDiff(
        old_name=old.name, new_name=new.name, old_instances=old.instances,
        new_instances=new.instances, old_kernels_per_forward=old.kernels_per_forward,
        new_kernels_per_forward=new.kernels_per_forward, kernel_source=new.kernel_source,
        kernels=_counts("kernel", _kernels(old), _kernels(new)),
        ops=_counts("op", _ops(old), _ops(new)),
        launches=_counts("launch", _launches(old), _launches(new)),
        families=_times(_families(old), _families(new)),
        categories=_times(old.categories_us, new.categories_us),
        old_us_per_forward=old.device_us_per_forward or old.cpu_us_per_forward,
        new_us_per_forward=new.device_us_per_forward or new.cpu_us_per_forward,
        unit="step" if old.phases or new.phases else "forward",
        old_attention_us=old.attention_us_per_forward,
        new_attention_us=new.attention_us_per_forward,
        old_attention_by_phase={p.name: p.attention_us for p in old.phases},
        new_attention_by_phase={p.name: p.attention_us for p in new.phases})


# name -> (per forward, µs per forward, family, category)
_Tally = dict[str, tuple[float, float, str | None, str | None]]


def _kernels(region: RegionReport) -> _Tally:
    out: _Tally = {}
    n = region.instances or 1
    for k in region.kernels:
        count, us, _, _ = out.get(k.name, (0.0, 0.0, None, None))
        out[k.name] = (count + k.per_forward, us + k.total_us / n, k.family, k.category)
    return out


def _ops(region: RegionReport) -> _Tally:
    n = region.instances or 1
    return {o.name: (o.per_forward, o.self_us / n, None, None) for o in region.ops}


def _launches(region: RegionReport) -> _Tally:
    n = region.instances or 1
    return {name: (count / n, 0.0, None, None) for name, count in region.launch_apis.items()}


def _families(region: RegionReport) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, (_, us, family, _) in _kernels(region).items():
        out[family or name] = out.get(family or name, 0.0) + us
    return out


def _counts(what: CountWhat, old: _Tally, new: _Tally) -> list[CountChange]:
    rows = []
    for name in dict.fromkeys([*old, *new]):
        a, b = old.get(name), new.get(name)
        count_a, us_a = (a[0], a[1]) if a else (0.0, 0.0)
        count_b, us_b = (b[0], b[1]) if b else (0.0, 0.0)
        rows.append(CountChange(
            name=name, what=what,
            old_per_forward=count_a, new_per_forward=count_b,
            state=_count_state(a is not None, b is not None, count_b - count_a),
            old_us=us_a, new_us=us_b, family=(b or a or (0, 0, None, None))[2],
            category=(b or a or (0, 0, None, None))[3]))
    order = {"removed": 0, "added": 1, "fewer": 2, "more": 3, "same": 4}
    return sorted(rows, key=lambda r: (order[r.state], -max(r.old_us, r.new_us), r.name))


def _count_state(in_old: bool, in_new: bool, delta: float) -> CountState:
    if not in_old:
        return "added"
    if not in_new:
        return "removed"
    if abs(delta) <= _SAME:
        return "same"
    return "more" if delta > 0 else "fewer"


def _times(old: dict[str, float], new: dict[str, float]) -> list[TimeChange]:
    names: Iterable[str] = dict.fromkeys([*old, *new])
    rows = [TimeChange(name=n, old_us=old.get(n, 0.0), new_us=new.get(n, 0.0)) for n in names]
    return sorted(rows, key=lambda t: -max(t.old_us, t.new_us))


def _findings(report: TraceReport, rename: dict[str, str]
              ) -> dict[tuple[str, str | None], str]:
    """``(rule, region) -> "rule: title"``, a region named as its match on the old side."""
    return {(f.rule, rename.get(f.region or "", f.region)): f"{f.rule}: {f.title}"
            for f in report.findings}
