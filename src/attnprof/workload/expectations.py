"""Expectations files: "guess first, then look", written down.

A small TOML file states what one forward should look like; ``attnprof check`` compares it
with what ran. Every key is optional::

    title = "flash attention is one fused kernel"
    region = "sdpa-flash"          # which region (variant) to check; default: the only one

    [per_forward]
    kernels = { max = 1 }          # kernels per forward (compute ops on CPU traces)
    latency_ms = { max = 2.0 }     # measured median, or per-forward time from the trace
    peak_memory_mib = { max = 64 }
    attention_share = { min = 0.9 }  # the attention time's share (core, fwd + bwd)

    [[kernel]]                     # kernels (or CPU compute ops) matching a regex
    match = "flash"
    count = 1                      # exact count per forward ...

    [[kernel]]
    match = "Memcpy|copy"
    max = 0                        # ... or bounds: min / max

    [[op]]                         # CPU ops anywhere in the op tree
    match = "aten::_safe_softmax"
    count = 0

The file is parsed into typed structs with unknown keys refused, so a typo (``cout = 1``)
is an error that names the key, not a silently ignored line.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import msgspec

from attnprof.errors import UsageError
from attnprof.workload.toml_file import read_toml


class Bound(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A numeric expectation: an exact value and/or an inclusive range."""

    count: float | None = None
    min: float | None = None
    max: float | None = None

    def describe(self, unit: str = "") -> str:
        """``"= 1"``, ``"≤ 2.0 ms"``, ``"1 … 3"``."""
        u = f" {unit}" if unit else ""
        if self.count is not None:
            return f"= {_num(self.count)}{u}"
        if self.min is not None and self.max is not None:
            return f"{_num(self.min)} … {_num(self.max)}{u}"
        if self.max is not None:
            return f"≤ {_num(self.max)}{u}"
        assert self.min is not None  # a loaded bound has a count, min or max
        return f"≥ {_num(self.min)}{u}"

    def holds(self, value: float) -> bool:
        """Whether ``value`` meets the bound (exact counts compare within float rounding)."""
        if self.count is not None and abs(value - self.count) > 1e-9:
            return False
        if self.min is not None and value < self.min:
            return False
        return not (self.max is not None and value > self.max)


class PatternBound(Bound, forbid_unknown_fields=True, kw_only=True):
    """A count expectation for names matching ``match`` (a regular expression)."""

    match: str


class PerForward(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    kernels: Bound | None = None
    latency_ms: Bound | None = None
    peak_memory_mib: Bound | None = None
    #: Share (0-1) of the forward's work inside recognised attention (SDPA, flex, fused
    #: attention kernels): how much of a model step is attention.
    attention_share: Bound | None = None


class Expectations(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A parsed expectations file."""

    title: str | None = None
    region: str | None = None
    per_forward: PerForward = msgspec.field(default_factory=PerForward)
    kernel: list[PatternBound] = msgspec.field(default_factory=list)
    op: list[PatternBound] = msgspec.field(default_factory=list)

    def is_empty(self) -> bool:
        pf = self.per_forward
        return not (self.kernel or self.op or pf.kernels or pf.latency_ms or pf.peak_memory_mib
                    or pf.attention_share)


def load_expectations(path: str | Path) -> Expectations:
    """Parse and validate an expectations file; any problem is a one-line UsageError."""
    p = Path(path)
    data = read_toml(p, f"expectations file {str(p)!r}", "an expectations file needs two "
                     "levels - see 'attnprof check --help' for the format")
    try:
        exp = msgspec.convert(data, type=Expectations)
    except msgspec.ValidationError as exc:
        raise UsageError(f"expectations file {str(p)!r}: {exc}; see 'attnprof check --help' "
                         "for the format") from None
    _check_semantics(exp, p)
    return exp


def _check_semantics(exp: Expectations, p: Path) -> None:
    if exp.is_empty():
        raise UsageError(f"expectations file {str(p)!r} expects nothing; add a [per_forward] "
                         "bound or a [[kernel]] / [[op]] entry")
    named = [("per_forward.kernels", exp.per_forward.kernels),
             ("per_forward.latency_ms", exp.per_forward.latency_ms),
             ("per_forward.peak_memory_mib", exp.per_forward.peak_memory_mib),
             ("per_forward.attention_share", exp.per_forward.attention_share)]
    named += [(f"kernel #{i + 1}", b) for i, b in enumerate(exp.kernel)]
    named += [(f"op #{i + 1}", b) for i, b in enumerate(exp.op)]
    for where, bound in named:
        if bound is None:
            continue
        check_bound(f"expectations file {str(p)!r}", where, bound,
                    share=where == "per_forward.attention_share")
        if isinstance(bound, PatternBound):
            try:
                re.compile(bound.match)
            except re.error as exc:
                raise UsageError(f"expectations file {str(p)!r}: {where} match "
                                 f"{bound.match!r} is not a regular expression ({exc})") from None


def check_bound(source: str, where: str, bound: Bound, *, share: bool = False) -> None:
    """Raise :class:`UsageError` naming ``where`` in ``source`` unless ``bound`` states
    something, in finite, non-negative numbers that can all hold at once (a ``share`` is
    between 0 and 1). Expectations and budgets files share this check."""
    if bound.count is None and bound.min is None and bound.max is None:
        raise UsageError(f"{source}: {where} has no count, min or max")
    for key in ("count", "min", "max"):
        value = getattr(bound, key)
        if value is None:
            continue
        if not math.isfinite(value):
            raise UsageError(f"{source}: {where} {key} must be a finite number, got "
                             f"{_num(value)}")
        if value < 0:
            raise UsageError(f"{source}: {where} {key} must not be negative, got "
                             f"{_num(value)}")
        if share and value > 1:
            raise UsageError(f"{source}: {where} is a share between 0 and 1 (0.9 = 90%), "
                             "not a percentage")
    if bound.min is not None and bound.max is not None and bound.min > bound.max:
        raise UsageError(f"{source}: {where} has min {_num(bound.min)} > max {_num(bound.max)}")
    span = Bound(min=bound.min, max=bound.max)
    if bound.count is not None and span != Bound() and not span.holds(bound.count):
        raise UsageError(f"{source}: {where} count {_num(bound.count)} is outside its own "
                         f"range {span.describe()}, so it can never hold; keep the count or "
                         "the range")


def _num(value: float) -> str:
    return f"{value:g}"
