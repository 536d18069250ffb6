"""Fixtures of the evaluation tests; the crafted data lives in eval_fixtures.py."""
import shutil

import pytest

from eval_fixtures import REPO, write_benchmark


@pytest.fixture
def harp_root(tmp_path, monkeypatch):
    """A scratch repository root: params.yaml copied, HARP_ROOT pointing at it."""
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    monkeypatch.setenv("HARP_ROOT", str(tmp_path))
    monkeypatch.setenv("HARP_PROGRESS", "off")
    write_benchmark(tmp_path)
    return tmp_path
