"""Real speech for the tests: flite voices joined into one recording with ground-truth turns."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from harp_lib import audio
from harp_lib.schema import Segment

SR = 16000


def flite(voice: str, text: str, path: Path) -> np.ndarray:
    """``text`` spoken by flite ``voice`` (slt, rms, awb, kal16), as 16 kHz float32."""
    subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(path)], check=True, timeout=60)
    return audio.load(path, sr=SR)


def spoken_turns(lines: Sequence[tuple[str, str]], tmp: Path, rec_id: str, *, pause_sec: float,
                 labels: dict, speaker_prefix: str = "") -> tuple[np.ndarray, list[Segment]]:
    """``lines`` of (voice, text) spoken in turn with ``pause_sec`` after each; returns the wave
    and one ground-truth segment per line (speaker ``speaker_prefix + voice``)."""
    pause = np.zeros(int(pause_sec * SR), np.float32)
    pieces, segs, t = [], [], 0.0
    for i, (v, text) in enumerate(lines):
        w = flite(v, text, tmp / f"{rec_id}_{i}.wav")
        pieces += [w, pause]
        segs.append(Segment(f"{rec_id}_{i:04d}", rec_id, t, t + len(w) / SR, f"{speaker_prefix}{v}", text,
                            labels=dict(labels)))
        t += (len(w) + len(pause)) / SR
    return np.concatenate(pieces), segs
