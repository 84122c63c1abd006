"""Where the numbers were measured: versions, device, CPU, threads, and this machine's
measured ceilings."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Ceilings", "Environment"]


class Environment(msgspec.Struct, kw_only=True):
    """Versions and hardware a measurement was taken with."""

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
    #: The host (``platform.node()``), so points measured on several machines stay apart.
    host: str | None = None
    #: CPUs this process may run on (its affinity), beside the ``threads`` it measured on.
    cpus: int | None = None


class Ceilings(msgspec.Struct, kw_only=True):
    """This machine's best matmul and copy rates, measured in the run (see measure.ceilings)."""

    matmul_tflops_per_s: float
    bandwidth_gbytes_per_s: float
    method: str
    #: When they were measured, if not in this run: ``attnprof env`` cached them (UTC).
    measured: str | None = None
