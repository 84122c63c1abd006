"""The attention masks a workload can ask for, their checks, and the pairs each admits.

No torch here: the tensors are built in :mod:`attnprof.variants.masks`, from the same
definitions. Queries are aligned to the end of the keys (query ``i`` sits at key position
``pos = i + k_len - q_len``). Key ``j`` is admitted for query ``i`` when:

=========  ==================================================================================
none       always
causal     ``j <= pos``
window     ``pos - window < j <= pos`` (``|j - pos| < window`` with ``--no-causal``)
padding    ``j < length[b]`` (the row's real tokens), and causal unless ``--no-causal``
document   ``j`` is in the same packed document as ``pos``, and causal unless ``--no-causal``
prefix     ``j < prefix`` or ``j <= pos`` (prefix-LM: a bidirectional prefix, then causal)
bool       a seeded random ``round(density * k_len)`` keys of every query row
bias       always (causal unless ``--no-causal``), plus a seeded N(0, 1) float bias per head
alibi      as ``bias``, with ALiBi's bias ``-slope_h * |pos - j|`` (slopes ``2^(-8h/H)``)
=========  ==================================================================================

A query row that admits no key (``bool`` at a low density) has no softmax; attnprof's
reference gives it a zero output, as SDPA's math backend and flex_attention do.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from attnprof.errors import UsageError
from attnprof.workload import lengths as lengths_mod


class Workload(Protocol):
    """What of :class:`attnprof.workload.problem.Workload` the masks read (a protocol: the
    workload module imports this one)."""

    @property
    def batch(self) -> int: ...
    @property
    def seq(self) -> int: ...
    @property
    def window(self) -> int: ...
    @property
    def causal(self) -> bool: ...
    @property
    def mask(self) -> str | None: ...
    @property
    def lengths(self) -> str | tuple[int, ...] | None: ...
    @property
    def lengths_dist(self) -> str: ...
    @property
    def mask_density(self) -> float: ...
    @property
    def prefix(self) -> int | None: ...

    @property
    def mask_kind(self) -> str: ...
    @property
    def is_causal(self) -> bool: ...
    @property
    def q_len(self) -> int: ...
    @property
    def k_len(self) -> int: ...
    @property
    def prefix_len(self) -> int: ...
    def row_lengths(self) -> tuple[int, ...]: ...
    def documents(self) -> tuple[tuple[int, ...], ...]: ...


#: Every mask ``--mask`` takes.
MASKS: tuple[str, ...] = ("none", "causal", "padding", "bool", "bias", "alibi", "document",
                          "prefix", "window")
#: Masks that include the causal constraint unless ``--no-causal`` turns it off.
CAUSAL_COMPOSES: tuple[str, ...] = ("window", "padding", "document", "bias", "alibi")
#: Masks whose per-row lengths come from ``--lengths``.
USES_LENGTHS: tuple[str, ...] = ("padding", "document")
#: Masks that add a float bias to the scores (SDPA takes them as a float ``attn_mask``).
FLOAT_MASKS: tuple[str, ...] = ("bias", "alibi")


def check_mask_fields(given: dict[str, Any]) -> None:
    """The mask checks that the given CLI fields decide alone (before torch's import)."""
    mask = given.get("mask")
    if mask is not None and mask not in MASKS:
        raise UsageError(f"unknown --mask {mask!r}; use one of {', '.join(MASKS)}")
    if mask == "causal" and given.get("causal") is False:
        raise UsageError("--mask causal contradicts --no-causal; use --mask none for no mask")
    if "mask_density" in given:
        _check_density(given["mask_density"])
    if "lengths_dist" in given:
        lengths_mod.check_distribution(given["lengths_dist"])
    if "prefix" in given:
        prefix = given["prefix"]
        if not isinstance(prefix, int) or isinstance(prefix, bool) or prefix < 0:
            raise UsageError(f"--prefix must be a non-negative integer, got {prefix!r}")
    kind = mask if mask is not None else "none" if given.get("causal") is False else "causal"
    for flag, name, kinds in (("--lengths", "lengths", USES_LENGTHS),
                              ("--mask-density", "mask_density", ("bool",)),
                              ("--prefix", "prefix", ("prefix",))):
        if name in given and kind not in kinds:
            raise UsageError(f"{flag} is for --mask {' or '.join(kinds)}, not --mask {kind}; "
                             f"drop {flag} or choose one of those masks")
    lengths = given.get("lengths")
    if isinstance(lengths, str):
        lengths = lengths_mod.parse_lengths(lengths)
    if lengths is not None and "seq" in given:
        lengths_mod.check_lengths(lengths, "--lengths", given["seq"])
    if (isinstance(given.get("lengths"), tuple) and kind == "padding" and "batch" in given
            and len(given["lengths"]) != given["batch"]):
        raise UsageError(f"--lengths gives {len(given['lengths'])} lengths for --batch "
                         f"{given['batch']}; give one length per batch row, or a range LO..HI")


def check_mask(workload: Workload) -> None:
    """Every mask check of a whole workload (lengths against its sizes included)."""
    fields: dict[str, Any] = {"mask": workload.mask, "lengths_dist": workload.lengths_dist,
                              "causal": workload.causal}
    _check_density(workload.mask_density)
    if workload.prefix is not None:
        fields["prefix"] = workload.prefix
    if workload.lengths is not None:
        fields["lengths"] = workload.lengths
    check_mask_fields(fields)
    kind = workload.mask_kind
    if kind == "padding":
        workload.row_lengths()
    elif kind == "document":
        workload.documents()
    elif kind == "prefix" and workload.prefix_len > workload.k_len:
        raise UsageError(f"--prefix {workload.prefix_len} is longer than the {workload.k_len} "
                         "keys; give a prefix of at most --seq tokens")


def _check_density(value: object) -> None:
    if (not isinstance(value, (int, float)) or isinstance(value, bool)
            or not math.isfinite(value) or not 0.0 <= value <= 1.0):
        raise UsageError(f"--mask-density must be a number in [0, 1] (the share of pairs "
                         f"admitted), got {value!r}")


def _band(pos: int, k_len: int, causal: bool, window: int | None) -> tuple[int, int]:
    """The keys [lo, hi] a causal and/or window constraint leaves query ``pos``."""
    lo, hi = 0, k_len - 1
    if causal:
        hi = min(hi, pos)
    if window is not None:
        lo = max(lo, pos - window + 1)
        if not causal:
            hi = min(hi, pos + window - 1)
    return lo, hi


def admitted_pairs(workload: Workload, window: int | None) -> float:
    """(query, key) pairs the workload's mask admits, summed over the batch.

    Counted exactly for every mask, except plain ``causal`` (and no mask): those follow
    FlashAttention's convention (half the dense product, :mod:`attnprof.workload.costs`).
    ``window`` is the window the variant applies (``None``: none).
    """
    q_len, k_len, b = workload.q_len, workload.k_len, workload.batch
    kind, causal = workload.mask_kind, workload.is_causal
    if window is None and kind in ("none", "causal", "bias", "alibi"):
        dense = float(q_len) * float(k_len) * b
        return dense * 0.5 if causal and kind == "causal" else (
            dense if not causal else float(b * _count(q_len, k_len, causal, None)))
    if kind == "bool":
        return float(b * q_len * round(workload.mask_density * k_len))
    offset = k_len - q_len
    if kind == "prefix":
        prefix = workload.prefix_len
        return float(b * sum(min(k_len, max(prefix, i + offset + 1)) for i in range(q_len)))
    if kind == "padding":
        total = 0
        for n in workload.row_lengths():
            for i in range(q_len):
                lo, hi = _band(i + offset, k_len, causal, window)
                total += max(0, min(hi, n - 1) - lo + 1)
        return float(total)
    if kind == "document":
        total = 0
        for docs in workload.documents():
            starts, start = [], 0
            for n in docs:
                starts.append((start, start + n - 1))
                start += n
            doc_of = [se for se in starts for _ in range(se[1] - se[0] + 1)]
            for i in range(q_len):
                pos = i + offset
                lo, hi = _band(pos, k_len, causal, window)
                s, e = doc_of[pos]
                total += max(0, min(hi, e) - max(lo, s) + 1)
        return float(total)
    return float(b * _count(q_len, k_len, causal, window))


def padded_pairs(workload: Workload) -> float:
    """The pairs a padded batch's call spans: every row at full length under the same
    causal rule, counted exactly (what the padding mask then throws away is waste)."""
    return float(workload.batch * _count(workload.q_len, workload.k_len, workload.is_causal,
                                         None))


def real_pairs(workload: Workload) -> float:
    """The pairs of a padded batch between real tokens only (a padded query row's pairs
    are not useful work, though the key-padding mask admits them)."""
    offset = workload.k_len - workload.q_len
    total = 0
    for n in workload.row_lengths():
        for i in range(workload.q_len):
            pos = i + offset
            if pos < n:
                lo, hi = _band(pos, workload.k_len, workload.is_causal, None)
                total += max(0, min(hi, n - 1) - lo + 1)
    return float(total)


def _count(q_len: int, k_len: int, causal: bool, window: int | None) -> int:
    offset = k_len - q_len
    total = 0
    for i in range(q_len):
        lo, hi = _band(i + offset, k_len, causal, window)
        total += max(0, hi - lo + 1)
    return total
