"""Session fixtures of the golden checks: the ci notebooks run once (every domain x setup)."""
from __future__ import annotations

import os

import pytest

import ci_golden


@pytest.fixture(scope="session")
def ci_run(tmp_path_factory):
    """The ci notebooks, every domain x setup, run once per session; the executed copies' folder."""
    out = tmp_path_factory.mktemp("golden_notebooks")
    if os.environ.get("HARP_GOLDEN_REUSE") != "1":
        ci_golden.run_ci_notebooks(out, log=lambda *_: None)
    return out


@pytest.fixture(scope="session")
def golden():
    return ci_golden.load_golden()


@pytest.fixture(scope="session")
def metrics(ci_run, tmp_path_factory):
    return ci_golden.collect(scratch=tmp_path_factory.mktemp("golden_extract"))
