"""docs/reports.md shows the first screen of every record kind's HTML report: one PNG per
kind that scripts/report_screenshots.py makes, 1280x800 and small, each referenced."""

from __future__ import annotations

import importlib.util
import struct
import sys
from pathlib import Path

from markdown_docs import REPO


def _script_kinds() -> list[str]:
    spec = importlib.util.spec_from_file_location(
        "report_screenshots", REPO / "scripts" / "report_screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return list(module.KINDS)


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", path
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_every_kind_has_a_small_first_screen_on_the_reports_page() -> None:
    from attnprof.record.family import RECORD_TYPES

    kinds = _script_kinds()
    assert set(kinds) == {t.__struct_config__.tag for t in RECORD_TYPES}  # every kind
    page = (REPO / "docs" / "reports.md").read_text(encoding="utf-8")
    for kind in kinds:
        png = REPO / "docs" / "screenshots" / f"{kind}.png"
        assert f"](screenshots/{kind}.png)" in page, kind
        assert _png_size(png) == (1280, 800), kind
        assert png.stat().st_size < 256 * 1024, kind
