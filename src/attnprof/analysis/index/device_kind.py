"""Which device a trace was recorded on, as the trace itself says, and which of its events
attnprof models.

Kernels, copies and sets are written under the same categories by every vendor's tracer,
so the kind comes from what surrounds them (see
:mod:`attnprof.knowledge.trace_categories`): a device-specific category first
(``xpu_runtime``, ``mtia_ccp_events``, ``cuda_runtime`` ...), then the names of the runtime
calls (``hip*`` is ROCm even under ``cuda_runtime``; ``ur*``/``ze*`` is XPU), then the
device properties (an AMD GPU is ROCm). A trace with device work but none of these is an
``accelerator`` of unknown kind: never assumed to be CUDA.

Events in categories attnprof does not model (MTIA's on-device events, any category it has
never seen) are counted, so the report can say plainly what it did not read; the CPU side
is analysed either way.
"""

from __future__ import annotations

import msgspec
import numpy as np

from attnprof.knowledge.trace_categories import (
    DEVICE_CATEGORIES,
    DEVICE_KIND_CATEGORIES,
    NON_DEVICE_CATEGORIES,
    RUNTIME_CALL_KINDS,
    RUNTIME_CATEGORIES,
    DeviceKind,
)
from attnprof.trace import Trace

__all__ = ["TraceDevice", "identify_device"]


class TraceDevice(msgspec.Struct, frozen=True):
    """The device a trace speaks for, how that was told, and its events by category."""

    kind: DeviceKind
    #: How the kind was told, for the report (e.g. ``"xpu_runtime events"``).
    evidence: str
    #: Device events attnprof models (kernels, copies, sets), per trace category.
    device_categories: dict[str, int]
    #: Events of categories attnprof reads but does not model, per trace category.
    unmodelled_categories: dict[str, int]


def identify_device(trace: Trace) -> TraceDevice:
    """The :class:`TraceDevice` of ``trace`` (see the module doc for the order of evidence)."""
    t = trace.events
    ids, counts = np.unique(t.cat[t.cat >= 0], return_counts=True)
    seen = {t.strings[int(i)]: int(c) for i, c in zip(ids.tolist(), counts.tolist(), strict=True)}
    kind, evidence = _kind(trace, seen)
    return TraceDevice(
        kind=kind, evidence=evidence,
        device_categories={c: n for c, n in seen.items() if c in DEVICE_CATEGORIES},
        unmodelled_categories={c: n for c, n in sorted(seen.items())
                               if c not in DEVICE_CATEGORIES and c not in NON_DEVICE_CATEGORIES})


def _kind(trace: Trace, seen: dict[str, int]) -> tuple[DeviceKind, str]:
    for kind, categories in DEVICE_KIND_CATEGORIES:
        found = [c for c in categories if c in seen]
        if not found:
            continue
        if kind == "cuda":
            by_calls = _kind_from_calls(trace)
            if by_calls is not None and by_calls[0] != "cuda":
                return by_calls
            if _amd(trace):
                return "rocm", "an AMD GPU in the device properties"
        return kind, f"{', '.join(found)} events"
    by_calls = _kind_from_calls(trace)
    if by_calls is not None:
        return by_calls
    if _amd(trace):
        return "rocm", "an AMD GPU in the device properties"
    props = trace.meta.device_properties
    if any("NVIDIA" in str(p.get("name", "")) or "computeMajor" in p for p in props):
        return "cuda", "CUDA device properties"
    if any(c in DEVICE_CATEGORIES for c in seen) or props:
        return "accelerator", "device events with no runtime calls naming their device"
    return "cpu", "no device events, runtime calls or device properties"


def _kind_from_calls(trace: Trace) -> tuple[DeviceKind, str] | None:
    """The vendor the runtime call names point to (the most calls win), if any."""
    t = trace.events
    rows = t.mask_cat(*RUNTIME_CATEGORIES)
    if not rows.any():
        return None
    ids, counts = np.unique(t.name[rows], return_counts=True)
    votes: dict[DeviceKind, int] = {}
    example: dict[DeviceKind, str] = {}
    for i, c in zip(ids.tolist(), counts.tolist(), strict=True):
        name = t.strings[int(i)] if i >= 0 else ""
        for kind, pattern in RUNTIME_CALL_KINDS:
            if pattern.search(name):
                votes[kind] = votes.get(kind, 0) + int(c)
                example.setdefault(kind, name)
                break
    if not votes:
        return None
    kind = max(votes, key=lambda k: votes[k])
    return kind, f"runtime calls such as {example[kind]}"


def _amd(trace: Trace) -> bool:
    return any("AMD" in str(p.get("name", "")) or "Radeon" in str(p.get("name", ""))
               for p in trace.meta.device_properties)
