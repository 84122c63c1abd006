"""What the store keeps beside a record, so that ``attnprof runs`` can list and filter
runs without decoding each one: device, host, torch, the variants or model, a one-line
summary of the workload."""

from __future__ import annotations

import msgspec

from attnprof.record.base import RecordBase
from attnprof.record.environment import Environment

__all__ = ["NAME_MARK", "RunSummary", "join_names", "split_names", "summarize_record"]

#: Separates names in the ``variants`` column (a character no flag can pass).
NAME_MARK = "\x1f"


class RunSummary(msgspec.Struct, frozen=True):
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
    """The listing columns of any record kind: its environment's, and what the kind says
    of itself (:meth:`~attnprof.record.base.RecordBase.listing`)."""
    env: Environment | None = getattr(record, "environment", None)
    said = record.listing()
    if env is None:
        return RunSummary(device=said.device, device_name=None, host=None, torch=None,
                          names=said.names, model=said.model, summary=said.summary)
    return RunSummary(device=env.device, device_name=env.device_name, host=env.host,
                      torch=env.torch, names=said.names, model=said.model,
                      summary=said.summary)
