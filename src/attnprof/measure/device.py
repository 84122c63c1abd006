"""What the device can do: presence, 16-bit support, memory, synchronisation.

Torch is imported lazily inside each function so that commands which never touch a device
(``analyze``, ``check`` on a trace) start fast.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from attnprof.errors import UsageError
from attnprof.workload import costs
from attnprof.workload.problem import Workload

GiB = float(1 << 30)
#: Refuse a workload whose unavoidable tensors alone exceed this share of device memory.
_MEMORY_SHARE = 0.9


def default_device() -> str:
    """``cuda`` when a CUDA device is present, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def check_device(device: str) -> None:
    """Raise :class:`UsageError` unless ``device`` names a device present on this machine."""
    import torch

    kind, colon, index = device.partition(":")
    if kind == "cpu":
        return
    if kind == "cuda":
        if colon and not index.isdigit():  # "cuda:" or "cuda:x": torch.device would raise
            raise UsageError(f"--device {device}: a CUDA device is cuda or cuda:N "
                             "(N a device index, e.g. cuda:0)")
        if not torch.cuda.is_available():
            raise UsageError(f"--device {device}: no CUDA device is available on this machine "
                             "(torch.cuda.is_available() is False); use --device cpu")
        count = torch.cuda.device_count()
        if index and int(index) >= count:
            raise UsageError(f"--device {device}: this machine has {count} CUDA device(s); "
                             f"use cuda:0 to cuda:{count - 1}")
        return
    if kind == "mps":
        if not torch.backends.mps.is_available():
            raise UsageError(f"--device {device}: MPS is not available here; use --device cpu")
        return
    raise UsageError(f"unknown device {device!r}; use cpu, cuda or cuda:N")


def check_dtype(device: str, dtype: str) -> None:
    """Raise :class:`UsageError` when the device cannot compute in ``dtype``."""
    import torch

    if device.startswith("cuda") and dtype == "bfloat16":
        major, minor = torch.cuda.get_device_capability(device)
        if major < 8:
            raise UsageError(f"--dtype bfloat16 needs compute capability 8.0+ but "
                             f"{torch.cuda.get_device_name(device)} is {major}.{minor}; "
                             "use --dtype float16")


def memory_capacity_bytes(device: str) -> int:
    """Total memory of a CUDA device, or the memory available to this process on CPU."""
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.get_device_properties(device).total_memory)
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 1 << 62  # unknown: do not refuse anything on a guess


def check_against_device(workload: Workload) -> None:
    """Device-dependent validation: present, can run the dtype, has room for the tensors."""
    check_device(workload.device)
    check_dtype(workload.device, workload.dtype)
    if short := memory_shortfall(costs.resident_bytes(workload), workload.device):
        need, have = short
        raise UsageError(f"this workload needs about {need} for q/k/v/output alone but "
                         f"{have}; reduce --batch, --seq or --heads")


def memory_shortfall(need_bytes: float, device: str) -> tuple[str, str] | None:
    """``("12.0 GiB", "cpu has 8.0 GiB")`` when ``need_bytes`` exceed the share of the
    device's memory a run may count on, else ``None`` (it fits)."""
    have = memory_capacity_bytes(device)
    if need_bytes <= _MEMORY_SHARE * have:
        return None
    return f"{need_bytes / GiB:.1f} GiB", f"{device} has {have / GiB:.1f} GiB"


def synchronize(device: str) -> None:
    """Wait for queued device work (a no-op on CPU)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def describe(device: str) -> dict[str, Any]:
    """Name and size of the device, for the environment record."""
    if device.startswith("cuda"):
        import torch

        props = torch.cuda.get_device_properties(device)
        return {
            "name": props.name,
            "compute_capability": f"{props.major}.{props.minor}",
            "memory_bytes": int(props.total_memory),
            "multiprocessors": props.multi_processor_count,
        }
    return {"name": cpu_model(), "memory_bytes": memory_capacity_bytes("cpu")}


def cpu_model() -> str:
    """The CPU's marketing name (``/proc/cpuinfo``), falling back to :mod:`platform`."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
