"""Padding waste of a padded batch: FLOPs and time spent on padding tokens.

The FLOPs come from the workload alone (:func:`attnprof.workload.masking.padded_pairs`, every
row at full length, against :func:`attnprof.workload.masking.real_pairs`, real query and key
tokens only). The time is measured: the padded baseline
``sdpa`` (SDPA on the padded batch with its padding mask) against ``sdpa-unpadded`` (the same
SDPA on each sequence at its own length, one after another) — the same kernels, so the
difference is what the padding cost, not which implementation ran.
"""

from __future__ import annotations

from attnprof.record.compare import CompareRecord, PaddingWaste
from attnprof.workload.masking import padded_pairs, real_pairs

#: The padded baseline and the unpadded total the time waste is measured between.
PADDED, UNPADDED = "sdpa", "sdpa-unpadded"
METHOD = ("padded: sdpa on the padded batch with its padding mask; unpadded total: "
          "sdpa-unpadded, SDPA on each sequence at its own length, one after another")


def padding_waste(record: CompareRecord) -> PaddingWaste | None:
    """The record's padding waste (``None`` unless its workload is a padded batch)."""
    workload = record.workload_spec()
    if workload.mask_kind != "padding":
        return None
    lengths = list(workload.row_lengths())
    scale = 4.0 * workload.heads * workload.head_dim
    padded = padded_pairs(workload) * scale
    useful = real_pairs(workload) * scale
    medians = {r.variant: r.latency_ms.median for r in record.results
               if r.status == "ok" and r.latency_ms is not None}
    padded_ms, unpadded_ms = medians.get(PADDED), medians.get(UNPADDED)
    time_ms = share = None
    note = ""
    if padded_ms is not None and unpadded_ms is not None:
        time_ms = padded_ms - unpadded_ms
        share = time_ms / padded_ms if padded_ms > 0 else None
    else:
        missing = [n for n, ms in ((PADDED, padded_ms), (UNPADDED, unpadded_ms)) if ms is None]
        note = (f"time waste not measured: {' and '.join(missing)} did not run ok; run "
                f"--variants {PADDED},{UNPADDED} to measure it")
    return PaddingWaste(
        lengths=lengths, real_tokens=sum(lengths),
        padded_tokens=workload.batch * workload.q_len, padded_flops=padded,
        useful_flops=useful, flops_share=1 - useful / padded if padded else 0.0,
        padded_variant=PADDED if padded_ms is not None else None, padded_ms=padded_ms,
        unpadded_variant=UNPADDED if unpadded_ms is not None else None,
        unpadded_ms=unpadded_ms, time_ms=time_ms, time_share=share, method=METHOD,
        note=note)
