"""What torch.profiler's event categories mean: which are device work, which are runtime
calls, which are CPU ops, and which device each speaks for. Facts about the trace format,
shared by the index and the passes.

The category names are kineto's (``libkineto/src/ActivityType.cpp`` maps each
``ActivityType`` to the string a Chrome trace writes as ``cat``): device kernels, copies and
sets are ``kernel``/``gpu_memcpy``/``gpu_memset`` whatever the vendor (CUPTI, roctracer and
Intel's PTI all write them), so the *device kind* is told by the host-side categories and
calls around them: ``cuda_runtime``/``cuda_driver`` (CUDA, and ROCm, whose calls are named
``hip*``), ``xpu_runtime``/``xpu_driver`` (Intel XPU: ``urEnqueueKernelLaunch``, ...),
``mtia_runtime`` with on-device ``mtia_ccp_events`` (Meta's MTIA), ``hpu_op`` (Gaudi),
``privateuse1_runtime``/``privateuse1_driver`` (an out-of-tree backend). Newer kineto also
writes vendor-neutral ``runtime``/``driver``; there the call names tell the vendor.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

__all__ = ["CATEGORIES", "DEVICE_CATEGORIES", "DEVICE_KIND_CATEGORIES",
           "FLOW_CATEGORIES", "NON_DEVICE_CATEGORIES", "OP_CATEGORIES",
           "RUNTIME_CALL_KINDS", "RUNTIME_CATEGORIES", "Category", "DeviceKind"]

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

#: Host-side runtime and driver calls (launches, copies, synchronisation) whose
#: ``correlation`` ids link device events to their launch: CUDA/ROCm, XPU, an out-of-tree
#: backend, kineto's vendor-neutral names, and the capitalised ``Runtime`` of old traces.
RUNTIME_CATEGORIES = ("cuda_runtime", "cuda_driver", "Runtime", "xpu_runtime", "xpu_driver",
                      "privateuse1_runtime", "privateuse1_driver", "runtime", "driver")
#: Flow events tying a launch to the device work it started.
FLOW_CATEGORIES = ("ac2g", "async_cpu_to_gpu")
#: CPU ops and the user's ``record_function`` annotations.
OP_CATEGORIES = ("cpu_op", "user_annotation")

DeviceKind = Literal["cpu", "cuda", "rocm", "xpu", "mtia", "hpu", "privateuse1", "accelerator"]

#: Categories that name the device they come from (checked in this order).
DEVICE_KIND_CATEGORIES: tuple[tuple[DeviceKind, tuple[str, ...]], ...] = (
    ("xpu", ("xpu_runtime", "xpu_driver")),
    ("mtia", ("mtia_runtime", "mtia_ccp_events", "mtia_insight", "mtia_counters",
              "mtia_workloadd")),
    ("hpu", ("hpu_op",)),
    ("privateuse1", ("privateuse1_runtime", "privateuse1_driver")),
    ("cuda", ("cuda_runtime", "cuda_driver", "cuda_sync", "cuda_event",
              "cuda_profiler_range")),
)

#: Runtime call names by vendor, for categories that do not say (``runtime``, ``Runtime``)
#: and to tell ROCm from CUDA (HIP calls are recorded under ``cuda_runtime``).
RUNTIME_CALL_KINDS: tuple[tuple[DeviceKind, re.Pattern[str]], ...] = (
    ("rocm", re.compile(r"^hip")),
    ("cuda", re.compile(r"^cu[A-Z]|^cuda")),
    ("xpu", re.compile(r"^(?:ur|ze|pi|sycl)[A-Z]")),
)

#: Categories attnprof reads or knowingly passes over (host-side calls, annotations, flows).
#: Any other category that is not in :data:`DEVICE_CATEGORIES` is reported as unmodelled:
#: MTIA's ``mtia_runtime`` and on-device ``mtia_ccp_events`` (their link to launches and
#: kernels is not in any public trace), Gaudi's ``hpu_op``, and names attnprof never saw.
NON_DEVICE_CATEGORIES = frozenset({
    *OP_CATEGORIES, *FLOW_CATEGORIES, *RUNTIME_CATEGORIES, "gpu_user_annotation",
    "python_function", "cpu_instant_event", "fwdbwd", "Trace", "overhead", "Overhead",
    "cuda_sync", "cuda_event", "cuda_profiler_range", "external_correlation", "Operator",
    "Python", "",
})  # fmt: skip
