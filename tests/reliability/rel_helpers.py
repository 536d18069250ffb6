"""Helpers for the reliability suite (imported by its conftest and tests; a uniquely named
module, because several test folders have a conftest.py): tiny hostile files written by the tests, the ci
benchmark (clinical only) and one uninterrupted reference run of each stage.

Everything expensive is session-scoped: the ci clinical benchmark (``harp_lib.corpora.synth.generate``,
cached renders make it ~1 s warm / ~12 s cold) and one extraction with cheap backends
(ASR and the text embedder off: the VAD, diarizer, cough labeler and acoustic embedder still
run on every recording), so the interrupted-run tests compare against it.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from harp_lib.config import load_config  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests/: the shared helpers (killer.py runs outside pytest)
from harp_testing import flite, tone  # noqa: E402,F401  (the shared helpers)

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
SR = 16000

#: Extraction overrides used throughout: real VAD / diarization / labeler / acoustic
#: embeddings, no ASR and no text embedder (the slow parts, irrelevant to reliability).
CHEAP_EXTRACT = {"workers": 1, "backends": {"asr": None, "text_emb": None}}


def cheap_cfg(tmp: Path | None = None, **over):
    """The ci profile with :data:`CHEAP_EXTRACT`; with ``tmp`` every ``paths.*`` lives under it."""
    o = {"extract": dict(CHEAP_EXTRACT)}
    if tmp is not None:
        o["paths"] = {k: str(tmp / k) for k in ("data", "benchmark", "extract", "index", "predictions",
                                                "judgements", "scores", "results")}
    o.update(over)
    return load_config(profile="ci", overrides=o)


def speechlike(sec: float, sr: int = SR, seed: int = 0) -> np.ndarray:
    """Voiced-speech-like signal: a 120-220 Hz harmonic source with a syllable envelope."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(sec * sr)) / sr
    f0 = 150 + 40 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    src = sum(np.sin(k * phase) / k for k in range(1, 12))
    env = np.clip(np.sin(2 * np.pi * 3.0 * t), 0, None) ** 0.5
    return (0.2 * src * env + 0.002 * rng.standard_normal(len(t))).astype(np.float32)


def tree_bytes(root: Path, sub: str, skip=("stage1",)) -> dict[str, bytes]:
    """Relative path -> bytes of every file under ``root/sub`` (skipping ``skip`` folders)."""
    base = root / sub
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*"))
            if p.is_file() and not set(p.relative_to(base).parts) & set(skip)}
