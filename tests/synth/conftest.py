"""One ``ci`` benchmark per test session (the generator is the expensive part)."""
from __future__ import annotations

import pytest

from harp_lib.synth import generate


@pytest.fixture(scope="session")
def synth_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("synth_cache")


@pytest.fixture(scope="session")
def ci_bench(tmp_path_factory, synth_cache):
    out = tmp_path_factory.mktemp("bench_ci")
    manifest = generate("ci", 0, out, cache_dir=synth_cache, progress=False)
    return out, manifest
