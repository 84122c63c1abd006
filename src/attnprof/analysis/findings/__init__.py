"""Findings rules: each a pure pass ``rule(ctx) -> list[Finding]``, applied in order.

One file per family of rules. :data:`RULES` is the order findings are reported in: what ran
(the SDPA backend) first, then the costs an expert looks for, from hidden work to the
overall verdict. A rule finds nothing when its evidence is absent from a trace (no shapes,
no metadata, no device); it never raises for a missing piece.
"""

from __future__ import annotations

from collections.abc import Callable

from attnprof.analysis.findings.backend import detect_gqa_math_fallback, report_sdpa_backend
from attnprof.analysis.findings.context import FindingContext
from attnprof.analysis.findings.copies import (
    detect_hidden_copies,
    detect_kv_expansion,
    detect_layout_copies,
)
from attnprof.analysis.findings.dispatch import detect_cpu_bound, report_unmodelled_device
from attnprof.analysis.findings.flex import detect_uncompiled_flex
from attnprof.analysis.findings.loops import detect_looped_attention
from attnprof.analysis.findings.masks import detect_mask_rebuild
from attnprof.analysis.findings.precision import detect_fp32_upcast, detect_safe_softmax
from attnprof.analysis.findings.scores import detect_materialised_scores
from attnprof.record.trace_report import Finding

__all__ = ["RULES", "FindingContext", "Rule", "run_rules"]

Rule = Callable[[FindingContext], list[Finding]]

RULES: tuple[Rule, ...] = (
    report_sdpa_backend,
    detect_gqa_math_fallback,
    detect_uncompiled_flex,
    detect_looped_attention,
    detect_hidden_copies,
    detect_kv_expansion,
    detect_layout_copies,
    detect_mask_rebuild,
    detect_materialised_scores,
    detect_fp32_upcast,
    detect_safe_softmax,
    detect_cpu_bound,
    report_unmodelled_device,
)


def run_rules(ctx: FindingContext, rules: tuple[Rule, ...] = RULES) -> list[Finding]:
    """Every rule's findings, in rule order."""
    return [finding for rule in rules for finding in rule(ctx)]
