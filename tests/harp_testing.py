"""The shared test helpers (every test package imports from here; tests/ is on sys.path).

One argument order everywhere: what to make first (duration / text), then where / how.

* :func:`tone` -- ``tone(sec, freq=220.0, *, sr, amp, noise, seed)``: a sine, optionally with
  seeded Gaussian noise;
* :func:`flite` -- ``flite(text, path, voice="slt")``: real speech from a flite voice;
* :func:`spoken_turns` -- flite lines joined into one recording with ground-truth segments;
* :func:`shared_build` -- ``shared_build(tmp_path_factory, name, build)``: a session fixture's
  folder built once per test run, also across pytest-xdist workers.
"""
from __future__ import annotations

import os
import pickle
import shutil
import subprocess
from pathlib import Path
from typing import Sequence

import numpy as np

from harp_lib.core import audio
from harp_lib.core.schema import Segment

__all__ = ["SR", "tone", "flite", "spoken_turns", "shared_build"]

SR = 16000


def tone(sec: float, freq: float = 220.0, *, sr: int = SR, amp: float = 0.3, noise: float = 0.0,
         seed: int = 0) -> np.ndarray:
    """``sec`` seconds of a ``freq`` Hz sine (float32), plus N(0, ``noise``) when ``noise`` > 0.

    >>> tone(0.5, 440.0).shape, tone(1.0, sr=8000).dtype
    ((8000,), dtype('float32'))
    """
    t = np.arange(int(sec * sr)) / sr
    x = amp * np.sin(2 * np.pi * freq * t)
    if noise:
        x = x + np.random.default_rng(seed).normal(0, noise, len(t))
    return x.astype(np.float32)


def flite(text: str, path: Path, voice: str = "slt") -> np.ndarray:
    """``text`` spoken by flite ``voice`` (slt, rms, awb, kal16) into ``path``, as 16 kHz float32."""
    subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(path)], check=True, timeout=60)
    return audio.load(path, sr=SR)


def spoken_turns(lines: Sequence[tuple[str, str]], tmp: Path, rec_id: str, *, pause_sec: float,
                 labels: dict, speaker_prefix: str = "") -> tuple[np.ndarray, list[Segment]]:
    """``lines`` of (voice, text) spoken in turn with ``pause_sec`` after each; returns the wave
    and one ground-truth segment per line (speaker ``speaker_prefix + voice``)."""
    pause = np.zeros(int(pause_sec * SR), np.float32)
    pieces, segs, t = [], [], 0.0
    for i, (v, text) in enumerate(lines):
        w = flite(text, tmp / f"{rec_id}_{i}.wav", v)
        pieces += [w, pause]
        segs.append(Segment(f"{rec_id}_{i:04d}", rec_id, t, t + len(w) / SR, f"{speaker_prefix}{v}", text,
                            labels=dict(labels)))
        t += (len(w) + len(pause)) / SR
    return np.concatenate(pieces), segs


def small_cfg(**extract_over):
    """The mini config with one extraction worker and short songs (extraction tests)."""
    from harp_lib.config import load_config
    over = {"extract": {"workers": 1, "options": {"kernel_cpd": {"min_song_sec": 15.0}}, **extract_over}}
    return load_config(profile="mini", overrides=over)


def shared_build(tmp_path_factory, name: str, build):
    """``(folder, build(folder))``, built once per test run.  Serially: in a fresh temporary folder.
    Under pytest-xdist: once for all workers, in ``<run's temp root>/<name>``: the first worker
    builds it under a file lock (harp_lib.core.locks) and pickles the result; the others wait for the
    lock and reuse both.  ``build`` must write only into the folder it is given."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        out = tmp_path_factory.mktemp(name)
        return out, build(out)
    from harp_lib.core.locks import stage_lock
    root = tmp_path_factory.getbasetemp().parent          # shared by the workers of this run only
    out, done = root / name, root / f"{name}.result.pkl"
    with stage_lock(out, "pytest-build"):
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            result = build(out)
            done.write_bytes(pickle.dumps(result))
    return out, pickle.loads(done.read_bytes())


def fake_package(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root/harp_lib`` (a package for the import checkers); ``root``."""
    for rel, text in files.items():
        p = root / "harp_lib" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root
