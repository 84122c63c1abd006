"""``attnprof analyze --json``: the analysis of one or more traces, one report each."""

from __future__ import annotations

from typing import Any

import msgspec

from attnprof.record.base import Listing, RecordBase
from attnprof.record.finding import top_finding
from attnprof.record.trace_report import TraceReport

__all__ = ["AnalyzeRecord", "UnreadableTrace"]


class UnreadableTrace(msgspec.Struct, kw_only=True):
    """A file of a folder that could not be read or analysed as a trace, and why."""

    source: str
    reason: str


_REGION = ("name", "instances", "kernels_per_forward", "kernel_source", "cpu_us_per_forward",
           "device_us_per_forward", "verdict", "attention_share", "peak_memory_bytes",
           "sdpa_backend")
#: Per phase of a training step (empty for forwards): wall time and attention's work, µs.
_PHASE_COLUMNS = ("forward_us", "backward_us", "optimizer_us", "forward_attention_us",
                  "backward_attention_us")
#: The analysis header: the trace, then one region's figures, then its findings' count,
#: then whether its figures are those of a contended capture, and its phases.
ANALYSIS_COLUMNS: tuple[str, ...] = ("source", "device", *(f"region_{c}" if c == "name" else c
                                                           for c in _REGION), "findings",
                                     "unit", "contended", *_PHASE_COLUMNS)


class AnalyzeRecord(RecordBase, tag="analyze"):
    """The reports of the traces given, in the order given (folders by name)."""

    reports: list[TraceReport] = msgspec.field(default_factory=list)
    #: Files of the folders given that could not be read as traces: the others were
    #: analysed all the same (``attnprof analyze`` then exits with status 1).
    unreadable: list[UnreadableTrace] = msgspec.field(default_factory=list)

    def flat_table(self) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
        """The flat table (:mod:`attnprof.record.flat`): one line per region of every trace."""
        return ANALYSIS_COLUMNS, analysis_lines(self)

    def headline(self) -> str:
        """The attention share of the first trace's first region with one, and the most
        severe finding of every trace (a capture of the user's loop says so first)."""
        return analysis_headline(self)

    def subject(self) -> str:
        """The traces read."""
        sources = [r.source for r in self.reports]
        return ", ".join(sources[:3]) + (f" and {len(sources) - 3} more"
                                         if len(sources) > 3 else "")

    def listing(self) -> Listing:
        """The first trace (and how many more); its device, the record having no
        environment of its own."""
        sources = [r.source for r in self.reports]
        first = sources[0] if sources else "no trace"
        more = f" and {len(sources) - 1} more" if len(sources) > 1 else ""
        return Listing(summary=f"{first}{more}",
                       device=self.reports[0].device if self.reports else None)


def analysis_headline(record: AnalyzeRecord) -> str:
    """See :meth:`AnalyzeRecord.headline`."""
    if not record.reports:
        return f"No trace could be analysed ({len(record.unreadable)} unreadable)."
    said = []
    capture = (record.reports[0].attnprof or {}).get("capture")
    if isinstance(capture, dict):
        steps = capture.get("steps_recorded")
        said.append("Captured from your own loop" + (
            f" ({steps} steps recorded)." if isinstance(steps, int) else "."))
    shared = [(report, region) for report in record.reports for region in report.regions
              if region.attention_share is not None]
    if shared:
        report, region = shared[0]
        share = region.attention_share or 0.0
        where = "" if len(record.reports) == 1 else f" in {report.source}"
        said.append(f"Attention is {share:.0%} of the {region.name} region's time{where}"
                    + (f" (SDPA backend {region.sdpa_backend})." if region.sdpa_backend
                       else "."))
    else:
        said.append("No attention was found in the traces' regions.")
    found = top_finding([(report.source if len(record.reports) > 1 else
                          (f.region or "trace"), f)
                         for report in record.reports for f in report.findings])
    said.append(found or "No findings.")
    if record.unreadable:
        said.append(f"{len(record.unreadable)} file(s) could not be read as traces.")
    return " ".join(said)


def analysis_lines(record: AnalyzeRecord) -> list[dict[str, Any]]:
    """An analysis: one line per region of every trace."""
    lines = []
    for report in record.reports:
        findings: dict[str | None, int] = {}
        for f in report.findings:
            findings[f.region] = findings.get(f.region, 0) + 1
        for region in report.regions:
            line: dict[str, Any] = {"source": report.source, "device": report.device,
                                    "findings": findings.get(region.name, 0)}
            line.update({("region_name" if c == "name" else c): getattr(region, c)
                         for c in _REGION})
            contention = report.contention
            line["unit"] = region.unit
            line["contended"] = bool(contention and contention.marked
                                     and contention.region == region.name)
            phases = {p.name: p for p in region.phases}
            for name in ("forward", "backward", "optimizer"):
                p = phases.get(name)
                line[f"{name}_us"] = p.us if p else None
                if name != "optimizer":
                    line[f"{name}_attention_us"] = p.attention_us if p else None
            lines.append(line)
    return lines
