"""Shared pytest setup for tests/ (kept generic).

The notebooks under notebooks/ have their own conftest (ci profile for nbval).
"""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (the folder holding params.yaml)."""
    return ROOT
