"""Fixtures for the reliability suite (helpers live in rel_helpers.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from harp_testing import shared_build

from rel_helpers import PY, ROOT, SR, cheap_cfg, flite, tone, tree_bytes  # noqa: F401


@pytest.fixture(scope="session")
def speech_wave(tmp_path_factory) -> np.ndarray:
    """Two real TTS sentences from two voices (about 6 s, 16 kHz)."""
    d = tmp_path_factory.mktemp("tts")
    a = flite("I have had a dry cough and a sore throat since Monday.", d / "a.wav", "slt")
    b = flite("Let me listen to your chest, please take a deep breath.", d / "b.wav", "rms")
    return np.concatenate([a, np.zeros(SR // 2, np.float32), b])


@pytest.fixture(scope="session")
def ci_bench(ci_benchmark) -> Path:
    """The ci benchmark of the session (tests/conftest.py); these tests use its clinical domain
    (3 consultations, 6 queries)."""
    return ci_benchmark


@pytest.fixture(scope="session")
def ci_reference(ci_bench, tmp_path_factory) -> Path:
    """One uninterrupted run: extract -> index -> infer (A1, A4) -> judge (rule), under one root.
    Read-only: tests copy what they change."""
    from harp_lib.agent.runner import run_setup
    from harp_lib.evaluate.judge import run_judge
    from harp_lib.extract.pipeline import extract_domain
    from harp_lib.retrieval.index_stage import build_index

    def build(root: Path) -> None:
        shutil.copytree(ci_bench / "clinical", root / "benchmark" / "clinical")
        cfg = cheap_cfg(root)
        extract_domain(cfg, "clinical", progress=False)
        build_index("clinical", cfg, progress=False)
        for s in ("A1", "A4"):
            run_setup(cfg, "clinical", s, progress=False)
            run_judge("clinical", s, "rule", cfg)
    return shared_build(tmp_path_factory, "ref", build)[0]         # once, also across xdist workers


