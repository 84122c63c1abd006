"""The terminal view of ``attnprof env``: the environment and the ceilings per dtype."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.formatting import fmt_rate
from attnprof.record.machine import MachineProfile
from attnprof.render.safe import terminal_safe

__all__ = ["render_machine"]


def render_machine(profile: MachineProfile, console: Console, *, cached: bool) -> None:
    """Environment fields, then one line per dtype; says when it was measured."""
    profile = terminal_safe(profile)
    env = profile.environment
    how = "cached" if cached else "measured now"
    console.print(Text(f"{env.device} · {env.device_name} · measured {profile.measured} "
                       f"({how}; attnprof env --refresh measures again)", style="bold"))
    table = Table(show_header=False)
    table.add_column("")
    table.add_column("")
    for name in ("host", "cpu_model", "threads", "cpus", "platform", "python", "torch", "cuda",
                 "cudnn", "numpy", "attnprof"):
        value = getattr(env, name)
        if value is not None:
            table.add_row(name, Text(str(value)))
    console.print(table)
    ceilings = Table(title="ceilings (the best this machine's libraries reach here)",
                     title_justify="left")
    for column in ("dtype", "matmul TFLOP/s", "copy GB/s", "how"):
        ceilings.add_column(column, justify="left" if column in ("dtype", "how") else "right")
    for dtype, c in profile.ceilings.items():
        ceilings.add_row(dtype, fmt_rate(c.matmul_tflops_per_s),
                         fmt_rate(c.bandwidth_gbytes_per_s), Text(c.method, style="dim"))
    console.print(ceilings)
