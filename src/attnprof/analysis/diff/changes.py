"""What differs around the numbers of two records: the environment (torch, device, host,
threads ...), the run's settings (the allocator state, the timing plan) and what was
measured (the workload, the model). Listed first in a diff: a new torch or another
allocator state explains more changed rows than any code change does."""

from __future__ import annotations

from typing import Any

import msgspec

from attnprof.record.diff import Change
from attnprof.record.environment import Environment

__all__ = ["environment_changes", "struct_changes"]

#: Environment fields that change numbers; ``device_info`` is compared by its name alone
#: (its other entries — free memory — differ every run).
_ENVIRONMENT_FIELDS = ("torch", "cuda", "cudnn", "device", "device_name", "cpu_model",
                       "threads", "host", "python", "platform", "numpy", "attnprof")


def environment_changes(old: Environment | None, new: Environment | None) -> list[Change]:
    """The environment fields that differ."""
    if old is None or new is None:
        return []
    return [Change(scope="environment", what=name, old=_text(getattr(old, name)),
                   new=_text(getattr(new, name)))
            for name in _ENVIRONMENT_FIELDS if getattr(old, name) != getattr(new, name)]


def struct_changes(scope: str, old: Any, new: Any, *, skip: tuple[str, ...] = ()) -> list[Change]:
    """Fields of two structs of one kind (or dicts) that differ, nested fields by a dotted
    path (``plan.min_time_s``)."""
    a = msgspec.to_builtins(old) if not isinstance(old, dict) else old
    b = msgspec.to_builtins(new) if not isinstance(new, dict) else new
    return [Change(scope=scope, what=path, old=_text(x), new=_text(y))
            for path, x, y in _differences(a, b, "") if path.split(".")[0] not in skip]


def _differences(a: Any, b: Any, prefix: str) -> list[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[tuple[str, Any, Any]] = []
        for key in dict.fromkeys([*a, *b]):
            path = f"{prefix}{key}"
            out += _differences(a.get(key), b.get(key), f"{path}.") if (
                isinstance(a.get(key), dict) and isinstance(b.get(key), dict)) else (
                [(path, a.get(key), b.get(key))] if a.get(key) != b.get(key) else [])
        return out
    return [(prefix.rstrip("."), a, b)] if a != b else []


def _text(value: Any) -> str:
    return "—" if value is None else str(value)
