"""A store path of each test's own."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "runs.db"
