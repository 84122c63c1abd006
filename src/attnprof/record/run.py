"""The run record: the one plain, versioned, serialisable result every later step reads.

A :class:`RunRecord` holds the environment, the workload, the measurement settings and one
:class:`VariantResult` per variant, with raw samples kept. It is defined with
``msgspec.Struct`` so that encoding is fast and loading validates types: a record written by
another version or edited by hand fails with a clear message instead of a KeyError later.
Bump :data:`SCHEMA_VERSION` on any incompatible change.
"""

from __future__ import annotations

import os
from typing import Any, Literal

import msgspec

from attnprof.atomic import write_atomic
from attnprof.errors import UsageError
from attnprof.record.trace_report import TraceReport
from attnprof.spec.workload import Workload

SCHEMA_VERSION = 1

Status = Literal["ok", "unsupported", "error", "oom"]


class Latency(msgspec.Struct, kw_only=True):
    """Summary of raw latency samples in milliseconds, with the samples themselves."""

    median: float
    iqr: float
    q1: float
    q3: float
    min: float
    max: float
    count: int
    noisy: bool
    samples: list[float]


class VariantResult(msgspec.Struct, kw_only=True):
    """Everything measured for one variant; fields are ``None`` when not measured."""

    variant: str
    family: str
    status: Status
    reason: str = ""
    summary: str = ""
    latency_ms: Latency | None = None
    #: "wall" (CPU: perf_counter around the call) or "cuda-events" (device time).
    timing: str | None = None
    cpu_dispatch_ms: float | None = None
    device_ms: float | None = None
    compile_time_s: float | None = None
    first_call_s: float | None = None
    peak_memory_bytes: int | None = None
    peak_memory_method: str | None = None
    flops: float | None = None
    flops_convention: str | None = None
    tflops_per_s: float | None = None
    bytes_moved: float | None = None
    gbytes_per_s: float | None = None
    #: tflops_per_s and gbytes_per_s as shares of this machine's measured ceilings (0-1).
    flops_of_ceiling: float | None = None
    bandwidth_of_ceiling: float | None = None
    max_abs_error: float | None = None
    tolerance: float | None = None
    within_tolerance: bool | None = None
    sdpa_backend: str | None = None
    ops: list[str] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)
    trace: str | None = None
    #: The analysis of ``trace`` (``attnprof profile``), when one was made.
    analysis: TraceReport | None = None


class Environment(msgspec.Struct, kw_only=True):
    """Where the numbers were measured."""

    attnprof: str
    python: str
    platform: str
    torch: str
    cuda: str | None
    cudnn: str | None
    device: str
    device_name: str
    device_info: dict[str, Any]
    cpu_model: str
    threads: int
    numpy: str | None = None


class Ceilings(msgspec.Struct, kw_only=True):
    """This machine's best matmul and copy rates, measured in the run (see measure.ceilings)."""

    matmul_tflops_per_s: float
    bandwidth_gbytes_per_s: float
    method: str


class RunRecord(msgspec.Struct, kw_only=True):
    """One comparison run. ``status`` is ``partial`` until every variant has finished."""

    schema_version: int = SCHEMA_VERSION
    kind: str = "compare"
    status: Literal["complete", "partial"] = "partial"
    created: str
    environment: Environment
    workload: dict[str, Any]
    settings: dict[str, Any]
    flops_convention: str
    results: list[VariantResult] = msgspec.field(default_factory=list)
    ceilings: Ceilings | None = None

    def workload_spec(self) -> Workload:
        """The :class:`Workload` this record measured."""
        return Workload.from_dict(self.workload)

    def result(self, variant: str) -> VariantResult:
        """The result row for ``variant`` (``KeyError`` if it was not run)."""
        for r in self.results:
            if r.variant == variant:
                return r
        raise KeyError(variant)

    def to_json(self) -> bytes:
        """Pretty JSON bytes (NaN/inf become null, as JSON has no such numbers)."""
        return msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n"

    @classmethod
    def from_json(cls, data: bytes | str, source: str = "record") -> RunRecord:
        """Decode and validate; raise :class:`UsageError` naming ``source`` on failure."""
        try:
            head = msgspec.json.decode(data, type=dict[str, Any])
        except msgspec.DecodeError as exc:
            raise UsageError(f"{source} is not valid JSON ({exc}); pass a file written by "
                             "attnprof --json") from None
        version = head.get("schema_version")
        if version != SCHEMA_VERSION:
            raise UsageError(f"{source} has schema_version {version!r}, this attnprof reads "
                             f"{SCHEMA_VERSION}; re-run the comparison with this version")
        try:
            return msgspec.convert(head, type=cls)
        except msgspec.ValidationError as exc:
            raise UsageError(f"{source} is not an attnprof record: {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically to ``path``."""
        write_atomic(path, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RunRecord:
        """Read a record saved by :meth:`save`."""
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise UsageError(f"cannot read record {str(path)!r}: {exc.strerror}") from None
        return cls.from_json(data, source=repr(str(path)))
