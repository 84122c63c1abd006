"""What the store keeps beside a record, so that ``attnprof runs`` can list and filter
runs without decoding each one: device, host, torch, the variants or model, a one-line
summary of the workload."""

from __future__ import annotations

from dataclasses import dataclass

from attnprof.formatting import format_bytes
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.base import RecordBase
from attnprof.record.check import CheckRecord
from attnprof.record.compare import CompareRecord
from attnprof.record.environment import Environment
from attnprof.record.limits import LimitsRecord
from attnprof.record.model import ModelRecord
from attnprof.record.sweep import SweepRecord

__all__ = ["NAME_MARK", "RunSummary", "join_names", "split_names", "summarize_record"]

#: Separates names in the ``variants`` column (a character no flag can pass).
NAME_MARK = "\x1f"


@dataclass(frozen=True)
class RunSummary:
    """The columns of one run besides its record."""

    device: str | None
    device_name: str | None
    host: str | None
    torch: str | None
    names: tuple[str, ...]
    model: str | None
    summary: str


def join_names(names: tuple[str, ...] | list[str]) -> str:
    """``("a", "b")`` -> ``"\\x1fa\\x1fb\\x1f"``: each name findable as ``\\x1fname\\x1f``."""
    return NAME_MARK + NAME_MARK.join(names) + NAME_MARK if names else ""


def split_names(text: str) -> list[str]:
    """The names :func:`join_names` joined."""
    return [n for n in text.split(NAME_MARK) if n]


def summarize_record(record: RecordBase) -> RunSummary:
    """The listing columns of any record kind."""
    env: Environment | None = getattr(record, "environment", None)
    base = dict(device=env.device if env else None, device_name=env.device_name if env else None,
                host=env.host if env else None, torch=env.torch if env else None)
    if isinstance(record, CompareRecord):
        return RunSummary(**base, names=tuple(r.variant for r in record.results), model=None,
                          summary=record.workload.describe())
    if isinstance(record, SweepRecord):
        axes = " × ".join(f"{a.field} {len(a.values)}" for a in record.grid.axes)
        return RunSummary(**base, names=tuple(record.variants), model=None,
                          summary=f"{len(record.points)} points ({axes or 'one point'}) from "
                                  f"{record.base.describe()}")
    if isinstance(record, ModelRecord):
        impls = tuple(dict.fromkeys(r.implementation for r in record.runs))
        phases = ",".join(dict.fromkeys(r.phase for r in record.runs))
        m = record.model
        return RunSummary(**base, names=impls, model=m.source,
                          summary=f"{m.source} ({m.architecture}, {m.layers} layers) "
                                  f"{m.dtype} {m.device} {phases}")
    if isinstance(record, AnalyzeRecord):
        sources = [r.source for r in record.reports]
        device = record.reports[0].device if record.reports else None
        first = sources[0] if sources else "no trace"
        more = f" and {len(sources) - 1} more" if len(sources) > 1 else ""
        return RunSummary(device=device, device_name=None, host=None, torch=None, names=(),
                          model=None, summary=f"{first}{more}")
    if isinstance(record, CheckRecord):
        held = sum(r.ok for r in record.rows)
        return RunSummary(**base, names=(), model=None,
                          summary=f"{record.target}: {held} of {len(record.rows)} "
                                  "expectations hold")
    if isinstance(record, LimitsRecord):
        return RunSummary(**base, names=tuple(dict.fromkeys(c.variant for c in
                                                            record.ceilings)),
                          model=None, summary=f"largest {record.field} within "
                                              f"{format_bytes(record.budget_bytes)} from "
                                              f"{record.base.describe()}")
    return RunSummary(**base, names=(), model=None, summary=record.kind)
