"""What torch.profiler's event categories mean: which are device work, which are runtime
calls, which are CPU ops. Facts about the trace format, shared by the index and the passes."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["CATEGORIES", "DEVICE_CATEGORIES", "FLOW_CATEGORIES", "OP_CATEGORIES",
           "RUNTIME_CATEGORIES", "Category"]

Category = Literal["compute", "communication", "memcpy", "memset"]
CATEGORIES: tuple[Category, ...] = get_args(Category)

#: Trace categories of device activity, by what they are (the one table of them; kernels
#: are split into compute and communication by name later).
DEVICE_CATEGORIES: dict[str, Category] = {
    "kernel": "compute",
    "Kernel": "compute",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
}

#: Host-side runtime and driver calls (launches, copies, synchronisation).
RUNTIME_CATEGORIES = ("cuda_runtime", "cuda_driver", "Runtime")
#: Flow events tying a launch to the device work it started.
FLOW_CATEGORIES = ("ac2g", "async_cpu_to_gpu")
#: CPU ops and the user's ``record_function`` annotations.
OP_CATEGORIES = ("cpu_op", "user_annotation")
