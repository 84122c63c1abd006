"""Dropout and autocast around a variant: which variants take them, and how accuracy is
judged.

* ``--dropout P``: only variants that pass it to their kernel (``takes_dropout``: SDPA, its
  pinned backends) run; others are ``unsupported`` with the reason, never silently
  without it. A dropped-out output is random, so it cannot be set against the float64
  reference: the variant is built a second time at dropout 0 for the accuracy check, and
  the row says so. Latency, memory and the SDPA backend are those of the dropout run
  (dropout decides which fused kernels may run).
* ``--autocast bf16|fp16``: the calls run under ``torch.autocast`` with float32 inputs, as
  a mixed-precision model runs; the output is cast back to float32 (the workload's dtype,
  which the checks and the reference expect), and the tolerance is the 16-bit dtype's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from attnprof.variants.base import Built, Support, Variant
from attnprof.workload.problem import Workload

if TYPE_CHECKING:
    import torch

__all__ = ["ACCURACY_AT_ZERO", "accuracy_call", "precision_support", "with_precision"]

#: The note of every row measured with dropout.
ACCURACY_AT_ZERO = ("accuracy checked at dropout 0: with dropout the output is random, "
                    "so the same variant was built again without it for the check")


def precision_support(variant: Variant, workload: Workload, support: Support) -> Support:
    """``support``, or a refusal when the workload asks for dropout the variant cannot
    apply."""
    if support.ok and workload.dropout > 0 and not variant.takes_dropout:
        return Support(False, f"{variant.name} applies no attention dropout; --dropout "
                              "runs the SDPA variants (sdpa, sdpa-math, sdpa-flash, ...)")
    return support


def with_precision(built: Built, workload: Workload) -> Built:
    """``built`` under the workload's autocast (unchanged without one)."""
    if workload.autocast is None:
        return built
    import torch

    dtype = getattr(torch, workload.compute_dtype)
    device, inner, call = workload.device_type, built.context, built.call

    @contextlib.contextmanager
    def context() -> Iterator[None]:
        with inner(), torch.autocast(device_type=device, dtype=dtype):
            yield

    def cast_back(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return call(q, k, v).to(q.dtype)

    note = (f"under torch.autocast({workload.compute_dtype}), float32 inputs; output cast "
            "back to float32")
    return Built(call=cast_back, context=context, notes=(*built.notes, note))


def accuracy_call(variant: Variant, built: Built, workload: Workload
                  ) -> tuple[Callable[[torch.Tensor, torch.Tensor, torch.Tensor],
                                  torch.Tensor], str | None]:
    """The call whose output is checked, and the note that says how: the measured one, or
    with dropout the variant built at dropout 0."""
    if workload.dropout <= 0:
        return built.call, None
    quiet = with_precision(variant.build(workload.replace(dropout=0.0)), workload)
    return quiet.call, ACCURACY_AT_ZERO
