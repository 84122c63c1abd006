"""What a comparison checks of every variant besides timing it: that it returns attention's
output, leaves the shared inputs alone, and that its failures stay its own.

Each check closes a way a variant could make a comparison silently wrong:

* :func:`checked_call` — a variant returning the wrong shape would be timed, credited with
  the workload's FLOPs and shown ``ok`` (one returning a single query row read 6132% of the
  matmul ceiling). Its output's shape, dtype and device are checked against the
  reference's on every warm-up call; the timed calls are not wrapped.
* :class:`InputGuard` — every variant gets the same q, k, v (the same memory), so one that
  writes into them in place would corrupt the accuracy and timing of the variants after
  it. The guard keeps a copy, compares after each of a variant's phases, names the variant
  and the tensor that changed, and puts the inputs back.

Which exceptions from a variant become its row is not decided by type: every one does
(``sys.exit(0)`` inside a variant must not end attnprof with status 0 and nothing written;
a ``KeyboardInterrupt`` it raises is its bug), unless a stop signal really arrived
(:func:`attnprof.signals.raise_if_stopped`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from attnprof.workload.problem import Workload

if TYPE_CHECKING:
    import torch

    from attnprof.measure.inputs import Inputs
    from attnprof.variants.base import AttentionCall

__all__ = ["InputGuard", "WrongOutput", "checked_call"]


class WrongOutput(Exception):
    """A variant returned something other than attention's output for the workload."""


def checked_call(call: AttentionCall, workload: Workload) -> AttentionCall:
    """``call``, raising :class:`WrongOutput` unless each output is a tensor shaped like q
    ([batch, heads, q_len, head_dim]), of the workload's dtype, on q's device."""
    import torch

    shape = (workload.batch, workload.heads, workload.q_len, workload.head_dim)
    dtype = getattr(torch, workload.dtype)

    def guarded(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out = call(q, k, v)
        if not isinstance(out, torch.Tensor):
            raise WrongOutput(f"returned {type(out).__name__}, not a tensor; return "
                              f"attention's output, a tensor of shape {list(shape)}")
        if tuple(out.shape) != shape or out.dtype != dtype or out.device != q.device:
            raise WrongOutput(
                f"returned shape {list(out.shape)} {_dtype(out.dtype)} on {out.device}, but "
                f"the reference output is {list(shape)} {_dtype(dtype)} on {q.device} (q's "
                "shape, the workload's dtype); return attention's output for every query")
        return out

    return guarded


def _dtype(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass
class _Saved:
    name: str
    tensor: torch.Tensor
    copy: torch.Tensor


class InputGuard:
    """A copy of the shared inputs, to tell whether a variant changed them and undo it.

    Costs one more copy of the inputs (q, k, v and, per mode, the upstream gradient or the
    new token), and a comparison after each phase of each variant, outside every timing.
    """

    def __init__(self, inputs: Inputs) -> None:
        import torch

        self._saved = []
        for f in fields(inputs):
            tensor = getattr(inputs, f.name)
            if isinstance(tensor, torch.Tensor):
                self._saved.append(_Saved(f.name, tensor, tensor.detach().clone()))

    def changed(self) -> list[str]:
        """The inputs whose values, shape, strides or dtype differ from the copy."""
        import torch

        return [s.name for s in self._saved
                if s.tensor.shape != s.copy.shape or s.tensor.stride() != s.copy.stride()
                or s.tensor.dtype != s.copy.dtype
                or not torch.equal(s.tensor.detach(), s.copy)]

    def restore(self) -> None:
        """Put every input back as it was, in the same tensor objects (the variants' steps
        hold them)."""
        import torch

        with torch.no_grad():
            for s in self._saved:
                if (s.tensor.shape, s.tensor.stride(), s.tensor.dtype) == (
                        s.copy.shape, s.copy.stride(), s.copy.dtype):
                    s.tensor.copy_(s.copy)
                else:  # resized, transposed or retyped in place
                    s.tensor.data = s.copy.clone()

    def check(self, phase: str) -> str | None:
        """After a variant's ``phase``: ``None`` if the inputs are untouched, else why its
        row is an error (the inputs are restored for the variants after it)."""
        changed = self.changed()
        if not changed:
            return None
        self.restore()
        names = " and ".join(changed)
        return (f"changed its input {names} in place while {phase}; every variant gets the "
                "same inputs, so its numbers and those of the variants after it would be "
                f"wrong (attnprof restored them): work on a copy, e.g. {changed[0]}.clone(), "
                "or out of place")
