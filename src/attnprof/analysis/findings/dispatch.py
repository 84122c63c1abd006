"""A forward the CPU cannot keep the device busy for (or a trace with no device at all).

When launching a forward's kernels takes the CPU longer than the device needs to run them,
the GPU idles between kernels: many tiny kernels, each shorter than the ~5-20 µs it takes
Python and the dispatcher to launch one. Short sequences and unfused attention are the
classic cases. A CPU-only trace has no device timeline to compare with, which is said once;
so is a device whose events attnprof does not model (MTIA's ``mtia_ccp_events``, any
category it has never seen), with those categories: the CPU side is analysed alone.
"""

from __future__ import annotations

from attnprof.analysis.findings.context import FindingContext, us_text
from attnprof.formatting import counted
from attnprof.record.trace_report import Finding

__all__ = ["detect_cpu_bound", "report_unmodelled_device"]

# Kernels shorter than this take less time than launching them (~5-20 µs from Python).
_TINY_US = 20.0
# The torch.profiler activity that records each device's kernels.
_ACTIVITY = {"cuda": "ProfilerActivity.CUDA", "rocm": "ProfilerActivity.CUDA",
             "xpu": "ProfilerActivity.XPU", "mtia": "ProfilerActivity.MTIA",
             "hpu": "ProfilerActivity.HPU", "privateuse1": "ProfilerActivity.PrivateUse1"}


def detect_cpu_bound(ctx: FindingContext) -> list[Finding]:
    """Regions whose CPU dispatch outlasts their device busy time; no device timeline, once."""
    if not any(view.on_device for view in ctx.views):
        return [] if ctx.report.unmodelled_categories else [_no_device(ctx)]
    findings = []
    for region in ctx.report.regions:
        if region.verdict != "cpu-bound" or not region.device_us_per_forward:
            continue
        cpu, device = region.cpu_us_per_forward, region.device_us_per_forward
        count = sum(k.count for k in region.kernels)
        mean = sum(k.total_us for k in region.kernels) / count if count else 0.0
        evidence = [
            f"CPU dispatch {us_text(cpu)} per forward vs device busy {us_text(device)} "
            f"({cpu / device:.1f}×)",
            f"{counted(region.kernels_per_forward, 'kernel')} per forward, "
            f"mean {us_text(mean)} each"
            + (" (tiny: launch overhead dominates)" if mean < _TINY_US else ""),
        ]
        if region.idle_us is not None:
            window = region.idle_us + device
            share = region.idle_us / window if window > 0 else 0.0
            evidence.append(f"device idle {us_text(region.idle_us)} per forward "
                            f"({share:.0%} of the step's device window)")
        if region.gaps:
            g = region.gaps[0]
            evidence.append(f"largest gap {us_text(g.dur_us)} after "
                            f"{g.after or 'the step start'}")
        # Where the CPU time went: many cheap launches, or a few expensive CPU-side ops.
        top = [o for o in region.ops[:3] if o.self_us > 0]
        if top:
            evidence.append("most CPU time in: " + ", ".join(
                f"{o.name} {us_text(o.self_us / region.instances)}" for o in top))
        findings.append(Finding(
            rule="cpu-bound", severity="warning", region=region.name,
            title="CPU-bound: the device waits for the CPU to launch work",
            evidence=evidence,
            fix=("launch fewer, larger kernels: a fused attention (SDPA flash/cuDNN, compiled "
                 "flex), torch.compile, CUDA graphs (mode='reduce-overhead'), or more work per "
                 "call (a larger batch); if the time is in a few CPU-side ops, move them "
                 "(initialisation, autotuning, synchronisation) out of the step"),
            data={"cpu_us_per_forward": cpu, "device_us_per_forward": device,
                  "kernels_per_forward": region.kernels_per_forward, "mean_kernel_us": mean,
                  "idle_us_per_forward": region.idle_us},
        ))
    return findings


def _no_device(ctx: FindingContext) -> Finding:
    regions = [r.name for r in ctx.report.regions]
    if ctx.report.device == "cpu":
        return Finding(
            rule="cpu-only", severity="info", region=None,
            title="CPU-only trace: no device timeline",
            evidence=["no kernel, memcpy or memset events: dispatch vs device time and idle "
                      "gaps cannot be judged; compute ops stand in for kernels"],
            fix="capture on a GPU (attnprof profile --device cuda) to see kernels and idle time",
            data={"regions": regions})
    return Finding(
        rule="cpu-only", severity="info", region=None,
        title=f"{ctx.report.device} trace without device activity",
        evidence=["the trace has GPU runtime calls or device properties but no kernel, memcpy "
                  "or memset events (CUPTI activity tracing was off, e.g. a range-profiler "
                  "capture): kernels and the device timeline cannot be shown"],
        fix=(f"record with {_ACTIVITY.get(ctx.report.device, 'the device activity')} in "
             "activities to capture kernels"),
        data={"regions": regions})


def report_unmodelled_device(ctx: FindingContext) -> list[Finding]:
    """Say, once, which event categories of the trace attnprof read but does not model."""
    r = ctx.report
    if not r.unmodelled_categories:
        return []
    listed = ", ".join(f"{c} ×{n}" for c, n in r.unmodelled_categories.items())
    evidence = [f"device: {r.device}" + (f" (told by {r.device_evidence})"
                                         if r.device_evidence else ""),
                f"events read but not modelled: {listed}"]
    if r.device_categories:
        evidence.append("modelled device events: " + ", ".join(
            f"{c} ×{n}" for c, n in r.device_categories.items()))
        evidence.append("kernels, device time and the verdict count the modelled events only")
    else:
        evidence.append("no kernel, copy or set events attnprof can read: kernels, device "
                        "time, idle gaps and the CPU/device verdict are not shown; the CPU "
                        "side (regions, op tree, compute ops in place of kernels, CPU time, "
                        "memory) is analysed")
    return [Finding(
        rule="device-unmodelled", severity="info", region=None,
        title=f"{r.device} trace: attnprof does not model its device events",
        evidence=evidence,
        fix=("nothing to fix in the code; read the device timeline of these categories in "
             "Perfetto (the trace opens as is), and read the findings as CPU-side only"),
        data={"device": r.device, "unmodelled_categories": dict(r.unmodelled_categories),
              "device_categories": dict(r.device_categories)},
    )]
