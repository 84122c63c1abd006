"""How a record shows itself as HTML in a notebook (``_repr_html_``).

The view is the HTML report's body, which the renderers make, and they sit above the
records: a record cannot import them. So the package installs the view here when it is
imported (:mod:`attnprof`, the top of the layers, whose import precedes every record
module's), and :meth:`RecordBase._repr_html_ <attnprof.record.base.RecordBase._repr_html_>`
calls it. Until one is installed (a record module loaded some other way), the record
shows its headline, escaped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["html_of", "set_html_view"]

_VIEW: list[Callable[[Any], str]] = []


def set_html_view(view: Callable[[Any], str]) -> None:
    """Make ``view(record)`` the HTML every record shows in a notebook."""
    _VIEW[:] = [view]


def html_of(record: Any) -> str:
    """``record`` as notebook HTML: the installed view's, else its headline escaped."""
    if _VIEW:
        return _VIEW[0](record)
    import html  # here: every record module imports this one, few records reach a notebook

    return f"<p>{html.escape(record.headline())}</p>"
