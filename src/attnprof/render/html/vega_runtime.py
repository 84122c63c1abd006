"""The Vega runtime the HTML report inlines (Vega, Vega-Lite and vega-embed), from
vl-convert-python's offline bundle.

Building the bundle takes vl-convert about a second, so it is built once per vl-convert
version and kept in the user's cache folder (``$XDG_CACHE_HOME/attnprof`` or
``~/.cache/attnprof``), written atomically; where that folder cannot be written, it is
built for each report. The bundle is checked to hold no ``</script`` before it is inlined.
"""

from __future__ import annotations

import os
from pathlib import Path

from attnprof.errors import UsageError

__all__ = ["vega_script"]

#: What the bundle runs: the libraries made global for the page's own script.
_SNIPPET = "window.vegaEmbed = vegaEmbed; window.vega = vega; window.vegaLite = vegaLite;"


def _cache_file(version: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "attnprof" / f"vega-bundle-{version}-1.js"


def vega_script() -> str:
    """The JavaScript that defines ``vegaEmbed``, ``vega`` and ``vegaLite`` on ``window``."""
    try:
        import vl_convert
    except ImportError:
        from attnprof.install import install_command  # only for the message

        raise UsageError("the HTML report's plots need vl-convert-python; install it with "
                         f"{install_command('report')}") from None
    version = getattr(vl_convert, "__version__", None) or _dist_version()
    path = _cache_file(version)
    try:
        text = path.read_text(encoding="utf-8")
        if text:
            return _inline(text)
    except OSError:
        pass
    text = vl_convert.javascript_bundle(_SNIPPET)
    try:
        from attnprof.atomic import write_atomic

        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text.encode())
    except (OSError, UsageError):  # a read-only home: build it each time instead
        pass
    return _inline(text)


def _dist_version() -> str:
    from importlib.metadata import version

    return version("vl-convert-python")


def _inline(text: str) -> str:
    # An end tag inside the script would end it early; in JavaScript "<\/" means "</".
    return text.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")
