"""Analytic costs of a workload: FLOPs, the I/O floor and memory footprints.

Pure functions of a :class:`~attnprof.workload.problem.Workload`; no torch. Every FLOP count says
which convention it follows, because tools disagree (``FlopCounterMode`` counts causal as
dense and CPU SDPA as zero). attnprof follows FlashAttention's benchmark convention:

* forward = 4 · B · H · Sq · Sk · D (two matmuls, 2 FLOPs per multiply-add), with H the
  *query* heads: grouped K/V heads save memory, not arithmetic;
* causal (square) = half of that, as FlashAttention counts it;
* a sliding window, and every other mask (padding, document, prefix, bool, bias, alibi:
  :mod:`attnprof.workload.masking`), counts the (query, key) pairs the mask actually admits,
  exactly, row by row — so a padded batch is credited with its real tokens only;
* backward = 2.5 × forward, so forward+backward = 3.5 × forward.

These are *useful* FLOPs: a naive kernel that computes the full S×S product and then masks
half of it away does more arithmetic than it is credited with, which is the point.
"""

from __future__ import annotations

from attnprof.workload.problem import Workload

FLOPS_CONVENTION = ("flash-attn: fwd 4·B·H·Sq·Sk·D, causal ×0.5, sliding window counts "
                    "admitted pairs, bwd 2.5×fwd")
#: The convention of a workload with any mask but none or plain causal.
MASKED_FLOPS_CONVENTION = ("fwd 4·H·D·(admitted (query, key) pairs, counted exactly per "
                           "batch row under the mask), bwd 2.5×fwd")


def flops_convention(workload: Workload) -> str:
    """The FLOP convention ``workload``'s counts follow (they differ for masks)."""
    return FLOPS_CONVENTION if workload.plain_mask else MASKED_FLOPS_CONVENTION


def attended_pairs(q_len: int, k_len: int, causal: bool, window: int | None) -> float:
    """Number of (query, key) pairs the mask admits, FlashAttention-style for plain causal.

    Queries are aligned to the end of the keys (a decode query sees the whole cache).
    Plain causal is credited exactly half of the dense product, following FlashAttention;
    a window is counted exactly.
    """
    dense = float(q_len) * float(k_len)
    if window is None:
        return dense * 0.5 if causal else dense
    offset = k_len - q_len  # query i sits at key position i + offset
    total = 0
    for i in range(q_len):
        pos = i + offset
        if causal:
            lo, hi = max(0, pos - window + 1), min(k_len - 1, pos)
        else:
            lo, hi = max(0, pos - window + 1), min(k_len - 1, pos + window - 1)
        total += max(0, hi - lo + 1)
    return float(total)


def forward_flops(workload: Workload, window: int | None = None) -> float:
    """FLOPs of one forward call under :func:`flops_convention`."""
    if not workload.plain_mask:
        from attnprof.workload.masking import admitted_pairs

        return 4.0 * workload.heads * admitted_pairs(workload, window) * workload.head_dim
    pairs = attended_pairs(workload.q_len, workload.k_len, workload.is_causal, window)
    return 4.0 * workload.batch * workload.heads * pairs * workload.head_dim


def step_flops(workload: Workload, window: int | None = None) -> float:
    """FLOPs of one measured step in the workload's mode (forward+backward = 3.5 × forward)."""
    fwd = forward_flops(workload, window)
    return fwd * 3.5 if workload.mode == "forward+backward" else fwd


def tensor_bytes(workload: Workload) -> dict[str, int]:
    """Bytes of each attention tensor at the workload's dtype."""
    e = workload.element_bytes
    q = workload.batch * workload.heads * workload.q_len * workload.head_dim * e
    kv = workload.batch * workload.num_kv_heads * workload.k_len * workload.head_dim * e
    return {"q": q, "k": kv, "v": kv, "out": q}


def step_bytes(workload: Workload) -> float:
    """The I/O floor: the bytes one step must move at least — read q, k, v, write out (and
    the gradients).

    A perfectly fused kernel pays only this; a variant's *traffic* (what its operators
    read and wrote, :mod:`attnprof.knowledge.op_traffic`) is what it really asks the
    memory for, and what the roofline and GB/s use.
    """
    t = tensor_bytes(workload)
    fwd = t["q"] + t["k"] + t["v"] + t["out"]
    if workload.mode != "forward+backward":
        return float(fwd)
    # backward reads q, k, v, out, d_out and writes dq, dk, dv
    bwd = t["q"] + t["k"] + t["v"] + 2 * t["out"] + t["q"] + t["k"] + t["v"]
    return float(fwd + bwd)


def resident_bytes(workload: Workload) -> int:
    """Memory any variant needs: inputs, output and, in training, their gradients."""
    t = tensor_bytes(workload)
    total = sum(t.values())
    if workload.mode == "forward+backward":
        total *= 2
    return total


def input_bytes(workload: Workload) -> int:
    """Bytes of what a step is given: q, k, v and, in training, the output's gradient."""
    t = tensor_bytes(workload)
    given = t["q"] + t["k"] + t["v"]
    return given + t["out"] if workload.mode == "forward+backward" else given


def step_floor_bytes(workload: Workload) -> int:
    """Bytes any variant's step must allocate: its output and, in training, the gradients
    of q, k and v — the least a step's measured peak can be (inputs are not in it)."""
    return resident_bytes(workload) - input_bytes(workload)


def score_matrix_bytes(workload: Workload, element_bytes: int | None = None) -> int:
    """Bytes of one materialised B·H·Sq·Sk score tensor (fp32 by default for the math path)."""
    e = workload.element_bytes if element_bytes is None else element_bytes
    return workload.batch * workload.heads * workload.q_len * workload.k_len * e


#: What a roofline says bounds a variant: the lower roof at its arithmetic intensity.
BOUNDS = ("memory", "compute")


def roofline_bound(flops: float | None, traffic_bytes: float | None,
                   peak_flops_per_s: float | None,
                   bandwidth_bytes_per_s: float | None) -> str | None:
    """``memory`` when the intensity ``flops / traffic_bytes`` lies left of the ridge
    (``peak / bandwidth`` FLOP per byte), where the bandwidth roof is the lower one, else
    ``compute``; ``None`` when any figure is unknown or not positive."""
    if not flops or not traffic_bytes or not peak_flops_per_s or not bandwidth_bytes_per_s:
        return None
    if min(flops, traffic_bytes, peak_flops_per_s, bandwidth_bytes_per_s) <= 0:
        return None
    ridge = peak_flops_per_s / bandwidth_bytes_per_s
    return "memory" if flops / traffic_bytes < ridge else "compute"


def achieved_rate(amount: float | None, seconds: float | None) -> float | None:
    """``amount / seconds``, or ``None`` when either is missing or the time is not positive."""
    if amount is None or seconds is None or seconds <= 0:
        return None
    return amount / seconds


def textbook_memory_bytes(workload: Workload, materializes_scores: bool) -> int:
    """The memory a back-of-envelope estimate gives one step's own allocations, the
    quantity a measured peak is: the output (and, in training, the gradients of q, k and v),
    plus — for a variant that materialises the scores — one B·H·Sq·Sk score matrix in the
    workload's dtype (and, in training, the copy saved for backward and its gradient). The
    inputs are the caller's, in neither.

    It is the estimate people make, not a prediction: real steps hold temporaries
    (masked copies, fp32 upcasts, softmax outputs, allocator rounding) the textbook leaves
    out, which is why ``attnprof limits`` shows it beside the measured ceiling and says how
    far off it is.
    """
    total = step_floor_bytes(workload)
    if materializes_scores:
        scores = score_matrix_bytes(workload)
        total += 3 * scores if workload.mode == "forward+backward" else scores
    return total
