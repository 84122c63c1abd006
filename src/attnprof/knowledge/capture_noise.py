"""What a quiet traced step looks like, so that a trace taken in a noisy moment says so.

Two things made a CPU trace of the same model attribute time differently from run to run,
both measured on the 2-core development VM (Llama, eager attention, seq 512, 4 layers):

* **Other processes' load.** While another job ran, the step took 1.1 to 2.3 s instead of
  0.48 to 0.50 s and changed shape: every intra-op parallel region waits at its barrier for
  the thread the scheduler parked, so ops with many short parallel regions grow more than
  long matmuls (attention went from 20 to 21% of the op time to 44%). The process's
  threads then waited on a run queue for 60 to 99% of the wall time; on the quiet machine
  0.5 to 2% (a thread woken at a barrier waits a little even alone).
* **Page faults the profiler causes.** Untraced, a warmed step faulted no page (freed memory
  is reused); traced, in a process's first profiler sessions, it faulted 2,500 to 27,000
  pages (10 to 105 MiB) per step: the profiler's event buffers, growing all session on the
  same heap, split the free blocks the step's large tensors used to reuse, so those come
  from fresh pages. The faults land in the ops that allocate a large output (an eager
  core's scaled, masked and softmaxed score matrices: up to 3x slower), and the core's
  share read 9 to 14% instead of 7.3 to 8.4%.

The thresholds below sit well clear of both sides of each.
"""

from __future__ import annotations

__all__ = ["CONTENDED", "EXTRA_FAULT_BYTES", "STEP_SHARE_SPREAD", "contended", "faulted",
           "noise_phrases"]

#: A step whose threads waited for a CPU more than this fraction of its wall time ran
#: while other processes held the CPUs.
CONTENDED = 0.05
#: A traced step that faulted more than this many bytes of pages beyond what an untraced
#: step faults paid for the profiler's own allocations (a MiB: ~0.3 ms of faults, where
#: the measured ones were 10 MiB and more).
EXTRA_FAULT_BYTES = 1 << 20


#: Traced steps of one capture whose attention shares differ by more than this (a fraction
#: of the step) describe different moments, and the one reported stands for none of them.
#: Five points: more than twice the 2-point accuracy the attribution is held to, so a
#: capture within it still answers "how much is attention" to that accuracy, while
#: contention moved attention's share by 20 points and more (above). Where the run-queue
#: wait cannot be read (not Linux), this is what still tells.
STEP_SHARE_SPREAD = 0.05


def contended(wait_fraction: float | None) -> bool:
    """True when a stretch waited for a CPU more than :data:`CONTENDED` of its time."""
    return wait_fraction is not None and wait_fraction > CONTENDED


def faulted(extra_bytes: float | None) -> bool:
    """True when traced steps faulted more than :data:`EXTRA_FAULT_BYTES` beyond untraced."""
    return extra_bytes is not None and extra_bytes > EXTRA_FAULT_BYTES


def noise_phrases(cpu_wait: float | None, extra_fault_bytes: float | None,
                  steps: str = "the traced steps") -> list[str]:
    """What made a capture's steps unlike an untraced one, in words (``steps`` names
    them): they waited for a CPU (:func:`contended`), or each faulted pages an untraced
    step does not (:func:`faulted`); empty when neither."""
    said = []
    if contended(cpu_wait):
        said.append(f"{steps} waited for a CPU {cpu_wait:.0%} of their time")
    if faulted(extra_fault_bytes):
        assert extra_fault_bytes is not None
        said.append(f"{steps} faulted {extra_fault_bytes / 2**20:.0f} MiB of pages each, "
                    "which an untraced step does not")
    return said
