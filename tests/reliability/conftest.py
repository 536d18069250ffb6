"""Fixtures for the reliability suite: tiny hostile files written by the tests, the ci
benchmark (clinical only) and one uninterrupted reference run of each stage.

Everything expensive is session-scoped: the ci clinical benchmark (``harp_lib.synth.generate``,
cached renders make it ~1 s warm / ~12 s cold) and one extraction with cheap backends
(ASR and the text embedder off: the VAD, diarizer, cough labeler and acoustic embedder still
run on every recording), so the interrupted-run tests compare against it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from harp_lib import audio  # noqa: E402
from harp_lib.config import load_config  # noqa: E402

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


def tone(sec: float, sr: int = SR, freq: float = 220.0, amp: float = 0.3) -> np.ndarray:
    t = np.arange(int(sec * sr)) / sr
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def speechlike(sec: float, sr: int = SR, seed: int = 0) -> np.ndarray:
    """Voiced-speech-like signal: a 120-220 Hz harmonic source with a syllable envelope."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(sec * sr)) / sr
    f0 = 150 + 40 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    src = sum(np.sin(k * phase) / k for k in range(1, 12))
    env = np.clip(np.sin(2 * np.pi * 3.0 * t), 0, None) ** 0.5
    return (0.2 * src * env + 0.002 * rng.standard_normal(len(t))).astype(np.float32)


def flite(text: str, path: Path, voice: str = "slt") -> np.ndarray:
    subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(path)], check=True, timeout=60)
    return audio.load(path, sr=SR)


@pytest.fixture(scope="session")
def speech_wave(tmp_path_factory) -> np.ndarray:
    """Two real TTS sentences from two voices (about 6 s, 16 kHz)."""
    d = tmp_path_factory.mktemp("tts")
    a = flite("I have had a dry cough and a sore throat since Monday.", d / "a.wav", "slt")
    b = flite("Let me listen to your chest, please take a deep breath.", d / "b.wav", "rms")
    return np.concatenate([a, np.zeros(SR // 2, np.float32), b])


@pytest.fixture(scope="session")
def ci_bench(tmp_path_factory) -> Path:
    """The ci benchmark, clinical domain only (3 consultations, 6 queries)."""
    from harp_lib.synth import generate
    root = tmp_path_factory.mktemp("ci") / "benchmark"
    generate("ci", 0, root, domains=["clinical"], progress=False)
    return root


@pytest.fixture(scope="session")
def ci_reference(ci_bench, tmp_path_factory) -> Path:
    """One uninterrupted run: extract -> index -> infer (A1, A4) -> judge (rule), under one root."""
    from harp_lib.agent.runner import run_setup
    from harp_lib.evaluate.judge import run_judge
    from harp_lib.extract.pipeline import extract_domain
    from harp_lib.index import build_index
    root = tmp_path_factory.mktemp("ref")
    shutil.copytree(ci_bench, root / "benchmark")
    cfg = cheap_cfg(root)
    extract_domain(cfg, "clinical", progress=False)
    build_index("clinical", cfg, progress=False)
    for s in ("A1", "A4"):
        run_setup(cfg, "clinical", s, progress=False)
        run_judge("clinical", s, "rule", cfg)
    return root


def tree_bytes(root: Path, sub: str, skip=("stage1",)) -> dict[str, bytes]:
    """Relative path -> bytes of every file under ``root/sub`` (skipping ``skip`` folders)."""
    base = root / sub
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*"))
            if p.is_file() and not set(p.relative_to(base).parts) & set(skip)}
