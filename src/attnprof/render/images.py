"""Images of a record, from the same Vega-Lite figures the HTML report draws: SVG (text)
and PNG (bytes), made by vl-convert-python without a browser.

A renderer's output is every figure of the record stacked in one image (a picture to
paste); :func:`write_plots` writes each figure as ``NAME.png`` and ``NAME.svg`` in a
folder (``--plots DIR``); :func:`write_figure` writes one figure (the sweep's ``--plot``).
vl-convert is an optional extra (``pip install 'attnprof[report]'``), imported when an
image is asked for.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from attnprof.atomic import write_atomic
from attnprof.errors import UsageError

if TYPE_CHECKING:  # the figures are built when an image is asked for, not at import
    from attnprof.record.family import Record
    from attnprof.render.figures.base import Figure

__all__ = ["IMAGE_FORMATS", "PngRenderer", "SvgRenderer", "check_image_path",
           "check_image_support", "image_of", "plot_files", "write_figure", "write_plots"]

#: Formats an image file may be written in, by suffix.
IMAGE_FORMATS = (".svg", ".png")
#: Pixels per CSS pixel of a PNG: sharp on a high-density screen and in print.
PNG_SCALE = 2.0


def check_image_support(flag: str) -> None:
    """Refuse, before any work, images when vl-convert-python is missing."""
    try:
        import vl_convert  # noqa: F401
    except ImportError:
        from attnprof.install import install_command  # only for the message

        raise UsageError(f"{flag} needs vl-convert-python; install it with "
                         f"{install_command('report')}") from None


def check_image_path(path: str | os.PathLike[str], flag: str) -> Path:
    """Refuse, before anything runs, an image path that is not .svg/.png or cannot be
    written, or images without vl-convert."""
    from attnprof.atomic import check_writable

    p = check_writable(path, flag)
    if p.suffix.lower() not in IMAGE_FORMATS:
        raise UsageError(f"{flag} {str(p)!r}: write a .svg or .png file")
    check_image_support(flag)
    return p


def image_of(spec: dict[str, Any], fmt: str) -> str | bytes:
    """``spec`` (a standalone Vega-Lite spec) drawn as ``svg`` text or ``png`` bytes."""
    check_image_support("an image")
    import vl_convert

    if fmt == "svg":
        svg: str = vl_convert.vegalite_to_svg(spec)
        return svg
    png: bytes = vl_convert.vegalite_to_png(spec, scale=PNG_SCALE)
    return png


def _stacked(record: Record) -> dict[str, Any]:
    """Every figure of ``record``, one above the other, as one standalone spec."""
    from attnprof.render.figures import figures_of
    from attnprof.render.figures.base import SCHEMA

    return {"$schema": SCHEMA, "background": "white", "spacing": 40,
            "vconcat": [f.spec for f in figures_of(record)]}


class SvgRenderer:
    """Every figure of the record, stacked, as one SVG."""

    name: ClassVar[str] = "svg"
    extension: ClassVar[str] = ".svg"
    output_is_binary: ClassVar[bool] = False

    def render(self, record: Record) -> str:
        out = image_of(_stacked(record), "svg")
        assert isinstance(out, str)
        return out if out.endswith("\n") else out + "\n"


class PngRenderer:
    """Every figure of the record, stacked, as one PNG."""

    name: ClassVar[str] = "png"
    extension: ClassVar[str] = ".png"
    output_is_binary: ClassVar[bool] = True

    def render(self, record: Record) -> bytes:
        out = image_of(_stacked(record), "png")
        assert isinstance(out, bytes)
        return out


def write_figure(figure: Figure, path: str | os.PathLike[str]) -> None:
    """One figure to ``path``, the format from its suffix (``.svg`` or ``.png``)."""
    fmt = Path(path).suffix.lower().lstrip(".")
    out = image_of(figure.standalone(), fmt)
    write_atomic(path, out.encode() if isinstance(out, str) else out)


def plot_files(names: list[str]) -> tuple[str, ...]:
    """The files :func:`write_plots` writes for figures named ``names`` (see
    :func:`~attnprof.render.figures.figure_names`): what ``--plots`` plans."""
    return tuple(f"{name}{suffix}" for name in names for suffix in IMAGE_FORMATS)


def write_plots(record: Record, folder: str | os.PathLike[str]) -> list[Path]:
    """Each figure of ``record`` as ``NAME.png`` and ``NAME.svg`` in ``folder`` (made if
    absent); the paths written. A link in the folder under a figure's name is refused,
    not followed (the command line refuses it before any work; this is the write's own
    guard, for one made since)."""
    from attnprof.render.figures import figures_of

    Path(folder).mkdir(parents=True, exist_ok=True)
    written = []
    for figure in figures_of(record):
        for name in plot_files([figure.name]):
            path = Path(folder) / name
            if path.is_symlink():
                raise UsageError(f"--plots {os.fspath(folder)!r}: its {name!r} is a symbolic "
                                 "link; attnprof never follows a link it did not name: "
                                 "remove it and write the plots again")
            write_figure(figure, path)
            written.append(path)
    return written
