"""Colours by meaning, shared by every terminal renderer: a status or a severity reads the
same in the comparison, the sweep, the model view and the trace report."""

from __future__ import annotations

from rich.text import Text

__all__ = ["SEVERITY_STYLE", "STATUS_STYLE", "error_text"]

#: A finding's severity.
SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
#: A row's status (compare, sweep, model runs).
STATUS_STYLE = {"ok": "green", "wrong": "bold red", "unsupported": "yellow", "error": "red",
                "oom": "magenta", "crashed": "bold red", "timeout": "magenta", "skipped": "dim"}


def error_text(error: float | None, within: bool | None, tolerance: float | None = None,
               nonfinite: int | None = None) -> Text:
    """An output's max |error| cell: red past its tolerance (and the tolerance, when given),
    ``NaN/Inf`` when the output held such values (``nonfinite``); "—" when nothing was
    compared."""
    if nonfinite:
        return Text("NaN/Inf", style="bold red")
    if error is None:
        return Text("—")
    text = Text(f"{error:.1e}")
    if within is False:
        text.stylize("bold red")
        if tolerance is not None:
            text.append(f" > {tolerance:.0e}", style="red")
    return text
