"""The page itself: the template filled with the sections, the records' JSON and the
figures' specs, each embedded so that no ``</script>`` inside a value can end its block."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from attnprof.errors import UsageError
from attnprof.render.html.links import link_traces
from attnprof.render.html.sections import section_of
from attnprof.render.safe import terminal_safe

if TYPE_CHECKING:
    from attnprof.record.family import Record

__all__ = ["build_page", "script_json"]


def script_json(data: bytes | str) -> str:
    """JSON text safe inside ``<script type="application/json">``: every ``<`` written
    as the escape ``\\u003c`` (JSON has ``<`` only inside strings, where the escape means
    the same character), so no ``</script>`` or ``<!--`` can appear."""
    text = data.decode() if isinstance(data, bytes) else data
    return text.replace("<", "\\u003c")


def build_page(records: Sequence[Record]) -> str:
    """The whole HTML document of ``records``."""
    try:
        import jinja2
    except ImportError:
        from attnprof.install import install_command  # only for the message

        raise UsageError("the HTML report needs jinja2 and vl-convert-python; install them "
                         f"with {install_command('report')}") from None
    from markupsafe import Markup

    from attnprof.render.html.vega_runtime import vega_script

    env = jinja2.Environment(loader=jinja2.PackageLoader("attnprof.render.html", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    sections, blobs = [], []
    for i, record in enumerate(records):
        # Shown text: control characters as escapes; the embedded JSON keeps the record.
        sections.append(section_of(terminal_safe(record), anchor=f"r{i}"))
        blobs.append(Markup(script_json(record.to_json())))
    link_traces(sections, records)  # hrefs from the records' own paths, never shown text
    specs = {f"{s.anchor}-{f.name}": Markup(script_json(msgspec.json.encode(f.standalone())))
             for s in sections for f in s.figures}
    title = sections[0].title if len(sections) == 1 else (
        f"attnprof report — {len(sections)} records")
    page = env.get_template("report.html.j2").render(
        title=title, sections=sections, blobs=blobs, specs=specs,
        vega=Markup(vega_script()), page_script=Markup(_asset(env, "report.js")),
        style=Markup(_asset(env, "report.css")),
        # The page's own two scripts carry it; no other script, inline handler or
        # javascript: URL runs (the policy has no 'unsafe-inline'). Fresh per page.
        nonce=secrets.token_urlsafe(18))
    return page if page.endswith("\n") else page + "\n"


def _asset(env: object, name: str) -> str:
    import jinja2

    assert isinstance(env, jinja2.Environment) and env.loader is not None
    source, _, _ = env.loader.get_source(env, name)
    return source
