"""Shared pytest setup for tests/ (kept generic).

The notebooks under notebooks/ have their own conftest (ci profile for nbval).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from harp_testing import shared_build

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (the folder holding params.yaml)."""
    return ROOT


@pytest.fixture(scope="session")
def ci_build(tmp_path_factory):
    """``harp synth --profile ci --seed 0`` (all domains), built ONCE per test session and shared
    by every test package: ``(folder, manifest)``.  Read-only: copy it before changing anything.
    Uses the generator's on-disk cache (``.cache/harp/synth``), as ``harp synth`` does."""
    from harp_lib.corpora.synth import generate
    return shared_build(tmp_path_factory, "ci_benchmark", lambda out: generate("ci", 0, out, progress=False))


@pytest.fixture(scope="session")
def ci_benchmark(ci_build) -> Path:
    """The shared ci benchmark folder (see :func:`ci_build`)."""
    return ci_build[0]


def pytest_ignore_collect(collection_path, config):
    """``--doctest-modules`` (pyproject.toml) is for harp_lib; the conftest files of the test
    packages share a basename and are plugins, not doctest modules."""
    if collection_path.name == "conftest.py":
        return True
    return None


#: Session fixtures that take several seconds to build: a test using one is `slow` (the fast loop,
#: ``pytest -m "not slow"``, never builds them).  Executed notebooks (nbval) are slow too.
SLOW_FIXTURES = frozenset({"ci_build", "ci_reference", "hostile_run", "song_bench", "ci_run"})


def _resolver_selected(config) -> bool:
    """The resolver dry-runs (tests/test_envs.py, marker ``resolver``) run only when ``-m`` names
    them (``pytest -m resolver tests/test_envs.py``, run by .ci/run after the README command)."""
    return "resolver" in (config.getoption("markexpr", "") or "")


@pytest.hookimpl(tryfirst=True)          # before the root conftest.py orders them for xdist
def pytest_collection_modifyitems(config, items):
    keep, dropped = [], []
    for item in items:
        if item.get_closest_marker("resolver") and not _resolver_selected(config):
            dropped.append(item)
            continue
        keep.append(item)
        path = getattr(item, "path", None)
        notebook = path is not None and (path.suffix == ".ipynb" or path.name == "test_notebooks.py")
        if notebook or SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
