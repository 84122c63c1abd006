"""How a collective shows in a torch.profiler trace, by where it runs.

* On a GPU the collective is a device kernel (NCCL's ``ncclKernel_AllReduce_...``,
  ``ncclDevKernel_...``; RCCL's the same names) that spins until every rank has joined: its
  duration is mostly waiting. Kernels are told apart by name
  (:func:`~attnprof.knowledge.kernel_names.decode_kernel_name`, family ``nccl``).
* On a CPU the work runs on the process group's own threads, which c10d wraps in a
  ``record_function`` named after the backend and the collective: ``gloo:all_reduce``,
  ``gloo:broadcast`` (``ProcessGroupGloo``), ``mpi:all_reduce`` (``ProcessGroupMPI``),
  ``ucc:...``. Such an annotation lasts from the start of the collective to its end on that
  rank, the wait for the others included. The ``nccl:...`` annotations of a GPU run are
  only the CPU side enqueueing the kernel, which is why they are not in this pattern.
"""

from __future__ import annotations

import re

__all__ = ["CPU_COLLECTIVE"]

#: Annotations of collectives executed on the CPU (see the module doc).
CPU_COLLECTIVE = re.compile(r"^(?:gloo|mpi|ucc):[a-z_]+$")
