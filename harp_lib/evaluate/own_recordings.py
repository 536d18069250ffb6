"""The real recordings of the own-recording question set (``harp_lib/data/own_questions.jsonl``),
built offline, and their reference turns.

* ``call`` -- the pyannote sample call (30 s, two real callers: Diane in New Jersey and Sheila in
  Texas; reference turns ``sample.rttm``, words and times ``sample.stm``, in
  ``.cache/harp/pyannote_sample/``, fetched by ``scripts/bootstrap.sh``);
* ``three`` -- the call between two lines of a third voice (flite ``awb``, "Martin"), 0.5 s
  apart: Martin 0.28-5.60 s, the call from 6.19 s, Martin again 36.95-41.63 s (41.7 s);
* ``medley`` -- four real recorded game-music tracks (Debian ``neverball-common``, see
  :mod:`harp_lib.corpora.synth.realmusic`) joined in seed-0 order with 3 s crossfades: track5, track1,
  track4, track6; changes at 94.44, 171.39, 283.48 s (355.1 s).

The truth in the question file was written from these layouts; :func:`build` checks that the
rendered audio still has them (another flite build or track set would make the truth wrong) and
refuses otherwise.

>>> LAYOUT["three"]["offset"], len(MEDLEY)
(6.19, 4)
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np

from harp_lib.core import audio
from harp_lib.core.rttm import read_rttm
from harp_lib.config import repo_root
from harp_lib.corpora.synth.realmusic import music_dir, real_medley

__all__ = ["SR", "MEDLEY", "LAYOUT", "sample_dir", "build", "reference_turns"]

SR = 16000
MEDLEY = ("neverball_track1.ogg", "neverball_track4.ogg", "neverball_track5.ogg", "neverball_track6.ogg")
#: Martin's two lines (flite awb) around the call
LINES = ("Hello, this is Martin from the shipping desk, calling about the order you placed last week.",
         "Thank you both, I will send the new password by mail tomorrow morning, goodbye.")
#: what the truth was written for: flite line lengths and speech (|x| > 0.01) inside them, the
#: call's offset in the three-voice mix, the medley's reference song changes and length (s)
LAYOUT = {"three": {"lines": (5.69, 5.005), "speech": ((0.28, 5.60), (0.26, 4.935)), "offset": 6.19},
          "medley": {"bounds": (94.444, 171.387, 283.484), "duration": 355.125}}
#: reference speaker names of sample.rttm
CALLERS = {"speaker90": "diane", "speaker91": "sheila"}
_FILES = {"call": "call.wav", "three": "three_voices.wav", "medley": "medley.wav"}


def sample_dir(root: Optional[Path] = None) -> Path:
    """``.cache/harp/pyannote_sample`` (the call, its RTTM and STM) under ``root`` (the repository)."""
    d = Path(root or repo_root()) / ".cache" / "harp" / "pyannote_sample"
    missing = [f for f in ("sample.wav", "sample.rttm", "sample.stm") if not (d / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{d}: {', '.join(missing)} missing; run scripts/bootstrap.sh (it fetches the "
                                f"pyannote sample call)")
    return d


def _flite(text: str, path: Path) -> np.ndarray:
    subprocess.run(["flite", "-voice", "awb", "-t", text, "-o", str(path)], check=True, timeout=60)
    return audio.load(path, sr=SR)


def _check(name: str, got, want, tol: float) -> None:
    if len(got) != len(want) or any(abs(a - b) > tol for a, b in zip(got, want)):
        raise RuntimeError(f"{name}: rendered layout {[round(x, 3) for x in got]} differs from the one the truth in "
                           f"harp_lib/data/own_questions.jsonl was written for {list(want)} (tolerance {tol} s); "
                           f"another flite build or music set: rewrite the truth from the new layout")


def _three(call: np.ndarray, tmp: Path) -> np.ndarray:
    a, b = (_flite(t, tmp / f"line{i}.wav") for i, t in enumerate(LINES))
    _check("three-voice lines", (len(a) / SR, len(b) / SR), LAYOUT["three"]["lines"], 0.02)
    gap = np.zeros(SR // 2, np.float32)
    return np.concatenate([a, gap, call, gap, b]).astype(np.float32)


def build(out: Path, root: Optional[Path] = None) -> dict[str, Path]:
    """Render the three recordings into ``out`` (16 kHz WAVs): ``{"call": ..., "three": ..., "medley": ...}``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(root or repo_root())
    paths = {k: out / v for k, v in _FILES.items()}
    shutil.copy(sample_dir(root) / "sample.wav", paths["call"])
    call = audio.load(paths["call"], sr=SR)
    with tempfile.TemporaryDirectory(prefix="own_lines_", dir=out) as tmp:
        audio.write(paths["three"], _three(call, Path(tmp)), SR)
    folder = root / ".cache" / "harp" / "music"
    wave, bounds, _ = real_medley(MEDLEY, seed=0, fade=3.0, folder=folder if folder.is_dir() else music_dir())
    _check("medley", (*bounds, len(wave) / SR), (*LAYOUT["medley"]["bounds"], LAYOUT["medley"]["duration"]), 0.01)
    audio.write(paths["medley"], wave, SR)
    return paths


def reference_turns(root: Optional[Path] = None) -> dict[str, list[tuple[float, float, str]]]:
    """``{recording: [(start, end, reference speaker), ...]}`` for the two speech recordings (the
    call's sample.rttm; in the mix shifted by the offset, with Martin's two lines)."""
    call = read_rttm(sample_dir(root) / "sample.rttm", sort=True, names=CALLERS)
    t = LAYOUT["three"]
    (a0, a1), (b0, b1) = t["speech"]
    b_at = t["offset"] + 30.0 + 0.5
    three = [(a0, a1, "martin"), *((s + t["offset"], e + t["offset"], k) for s, e, k in call),
             (b_at + b0, b_at + b1, "martin")]
    return {"call": call, "three": sorted(three)}
