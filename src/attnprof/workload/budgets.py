"""Budgets files: the limits a repository holds its attention to, for CI.

A TOML file of ``[[budget]]`` entries. Each names the variants and the workloads it applies
to (selectors; every one is optional) and bounds what was measured there. Bounds are the
expectations file's :class:`~attnprof.workload.expectations.Bound` (``{ max = 5.0 }``,
``{ min = 0.3 }``, ``{ count = ... }``) under the same names where the two files overlap
(``latency_ms``, ``peak_memory_mib``), checked by the same strict rules::

    title = "serving budgets"

    [[budget]]
    variant = "sdpa-flash"            # a name, a list of names, or absent for every variant
    seq = ">=2048"                    # selectors: 4096, ">=2048", "<8192", "1024..4096"
    mode = "forward"                  # dtype, mode, device: a name; causal: true / false
    latency_ms = { max = 5.0 }        # median latency of one step
    peak_memory_mib = { max = 2048 }  # peak memory of one step
    max_abs_error = { max = 1e-4 }    # against the float64 reference
    tflops_share = { min = 0.3 }      # achieved TFLOP/s as a share (0-1) of the matmul ceiling

Unknown keys are refused (a typo is an error naming the key, not a silently ignored
limit), and every bound must be finite and consistent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import msgspec

from attnprof.errors import UsageError
from attnprof.workload.expectations import Bound, check_bound
from attnprof.workload.grid import INTEGER_FIELDS
from attnprof.workload.problem import MODES, Workload, canonical_dtype
from attnprof.workload.toml_file import read_toml

__all__ = ["METRICS", "Budget", "Budgets", "Selector", "load_budgets"]

#: Each bounded quantity: its unit and whether it is a 0-1 share.
METRICS: dict[str, tuple[str, bool]] = {
    "latency_ms": ("ms", False),
    "peak_memory_mib": ("MiB", False),
    "max_abs_error": ("", False),
    "tflops_share": ("", True),
}
_SELECTOR = re.compile(r"^\s*(?:(?P<op>>=|<=|==|>|<)\s*(?P<value>\d+)|"
                       r"(?P<lo>\d+)\s*\.\.\s*(?P<hi>\d+)|(?P<exact>\d+))\s*$")


@dataclass(frozen=True)
class Selector:
    """One workload condition: ``seq >= 2048``, ``dtype == bfloat16``, ``seq in 1024..4096``."""

    field: str
    op: str
    value: int | str | bool
    high: int | None = None  # the upper end of a range (op "..")

    def matches(self, workload: Workload) -> bool:
        have = getattr(workload.resolved(), self.field)
        if self.op == "==":
            return bool(have == self.value)
        assert isinstance(have, int) and isinstance(self.value, int)
        if self.op == "..":
            assert self.high is not None
            return self.value <= have <= self.high
        return {">=": have >= self.value, "<=": have <= self.value,
                ">": have > self.value, "<": have < self.value}[self.op]

    def describe(self) -> str:
        if self.op == "..":
            return f"{self.field} {self.value}..{self.high}"
        value = str(self.value).lower() if isinstance(self.value, bool) else self.value
        return f"{self.field}{'=' if self.op == '==' else ' ' + self.op + ' '}{value}"


class Budget(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One ``[[budget]]`` entry as written: which variants and workloads, what bounds."""

    variant: str | list[str] | None = None
    batch: int | str | None = None
    heads: int | str | None = None
    kv_heads: int | str | None = None
    seq: int | str | None = None
    kv_seq: int | str | None = None
    head_dim: int | str | None = None
    window: int | str | None = None
    dtype: str | None = None
    mode: str | None = None
    device: str | None = None
    causal: bool | None = None
    latency_ms: Bound | None = None
    peak_memory_mib: Bound | None = None
    max_abs_error: Bound | None = None
    tflops_share: Bound | None = None

    @property
    def variants(self) -> tuple[str, ...]:
        """The variants named (empty: every variant)."""
        if self.variant is None:
            return ()
        return (self.variant,) if isinstance(self.variant, str) else tuple(self.variant)

    def bounds(self) -> list[tuple[str, Bound]]:
        """The bounded metrics, in :data:`METRICS` order."""
        return [(m, b) for m in METRICS if (b := getattr(self, m)) is not None]

    def selectors(self) -> list[Selector]:
        """The workload conditions, parsed (the file was checked on load)."""
        return [_selector(f"budget {self.variant!r}", name, value)
                for name in (*INTEGER_FIELDS, "dtype", "mode", "device", "causal")
                if (value := getattr(self, name)) is not None]

    def applies_to(self, variant: str, workload: Workload) -> bool:
        """Whether this budget bounds ``variant`` measured on ``workload``."""
        if self.variants and variant not in self.variants:
            return False
        return all(s.matches(workload) for s in self.selectors())

    def describe(self) -> str:
        """``sdpa-flash · seq >= 2048 mode=forward`` (``every variant`` when unnamed)."""
        who = ", ".join(self.variants) or "every variant"
        where = " ".join(s.describe() for s in self.selectors())
        return f"{who} · {where}" if where else who


class Budgets(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A parsed budgets file."""

    title: str | None = None
    budget: list[Budget] = msgspec.field(default_factory=list)


def load_budgets(path: str | Path) -> Budgets:
    """Parse and check a budgets file; any problem is one :class:`UsageError` line naming
    the file and the key."""
    p = Path(path)
    source = f"budgets file {str(p)!r}"
    data = read_toml(p, source, "see the budgets format in docs/scale.md")
    try:
        budgets = msgspec.convert(data, type=Budgets)
    except msgspec.ValidationError as exc:
        raise UsageError(f"{source}: {_key_path(str(exc))}; see the budgets format in "
                         "docs/scale.md") from None
    if not budgets.budget:
        raise UsageError(f"{source} states no budget; add a [[budget]] entry with e.g. "
                         "latency_ms = { max = 5.0 }")
    for i, budget in enumerate(budgets.budget, start=1):
        where = f"budget #{i}"
        if not budget.bounds():
            raise UsageError(f"{source}: {where} bounds nothing; add one of "
                             f"{', '.join(METRICS)}")
        for metric, bound in budget.bounds():
            check_bound(source, f"{where} {metric}", bound, share=METRICS[metric][1])
        if budget.variant is not None and not all(budget.variants):
            raise UsageError(f"{source}: {where} variant is empty; name a variant or leave "
                             "the key out for every variant")
        for name in (*INTEGER_FIELDS, "dtype", "mode", "device", "causal"):
            value = getattr(budget, name)
            if value is not None:
                _selector(f"{source}: {where}", name, value)
    return budgets


def _selector(where: str, name: str, value: int | str | bool) -> Selector:
    """Parse one selector; a bad one is a UsageError naming ``where`` and the key."""
    if name in INTEGER_FIELDS:
        if isinstance(value, bool):
            raise UsageError(f"{where} {name}: {value!r} is not a size selector; use e.g. "
                             f'{name} = 4096 or {name} = ">=2048"')
        if isinstance(value, int):
            return Selector(name, "==", value)
        match = _SELECTOR.match(str(value))
        if match is None:
            raise UsageError(f"{where} {name}: {value!r} is not a selector; use e.g. "
                             f'{name} = 4096, ">=2048", "<8192" or "1024..4096"')
        if match["exact"]:
            return Selector(name, "==", int(match["exact"]))
        if match["lo"]:
            lo, hi = int(match["lo"]), int(match["hi"])
            if lo > hi:
                raise UsageError(f"{where} {name}: range {value!r} ends below its start; "
                                 f'write "{hi}..{lo}"')
            return Selector(name, "..", lo, hi)
        return Selector(name, match["op"], int(match["value"]))
    if name == "dtype":
        try:
            return Selector(name, "==", canonical_dtype(str(value)))
        except UsageError as exc:
            raise UsageError(f"{where} dtype: {exc}") from None
    if name == "mode" and value not in MODES:
        raise UsageError(f"{where} mode: {value!r} is not a mode; use one of {', '.join(MODES)}")
    return Selector(name, "==", value)


def _key_path(message: str) -> str:
    """msgspec's ``Object contains unknown field `x` - at `$.budget[1]`)`` in the file's own
    words: ``budget #2: unknown key 'x'``."""
    match = re.search(r"at `\$\.budget\[(\d+)\](?:\.([\w.]+))?`", message)
    unknown = re.search(r"unknown field `([^`]+)`", message)
    text = re.sub(r"\s*-\s*at `[^`]*`", "", message)
    if match:
        index, key = int(match[1]) + 1, match[2]
        if unknown and key in METRICS:
            return f"budget #{index} {key}: unknown key {unknown[1]!r}; use count, min or max"
        if unknown:
            return (f"budget #{index}{' ' + key if key else ''}: unknown key "
                    f"{unknown[1]!r}; use variant, workload selectors ({', '.join(INTEGER_FIELDS)}"
                    f", dtype, mode, device, causal) or {', '.join(METRICS)}")
        return f"budget #{index} {key or ''}: {text}".replace("  ", " ")
    if unknown:
        return f"unknown key {unknown[1]!r}; use title and [[budget]] entries"
    return text
