"""The synth tests use the session's one ``ci`` benchmark (tests/conftest.py: ci_build)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def synth_cache():
    """The generator cache the shared ci benchmark was built with (params ``benchmark.cache_dir``)."""
    from harp_lib.corpora.synth.core import load_params, repo_root
    return repo_root() / load_params("ci")["cache_dir"]


@pytest.fixture(scope="session")
def ci_bench(ci_build):
    return ci_build
