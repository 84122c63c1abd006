"""Fixtures of the model tests: the user factories file."""

from __future__ import annotations

from pathlib import Path

import pytest
from model_helpers import HAND_WRITTEN


@pytest.fixture(scope="session")
def factories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user file with factories: hand-written attention, MHA, and broken ones."""
    path = tmp_path_factory.mktemp("factories") / "my_models.py"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    return path
