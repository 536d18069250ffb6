"""Text-to-speech voices with emotional prosody (flite; deterministic and fast).

Each :class:`Voice` is one speaker identity.  Emotion is rendered through pitch level and
range, speaking rate, loudness and the pause after the sentence (:data:`EMOTION_PROSODY`);
the words come from the matching sentence bank.  Voices without native pitch control in
flite (rms) are pitch-shifted by rendering slower and resampling.

>>> sorted(VOICES)
['awb', 'kal', 'rms', 'slt']
>>> prosody("Sad", 1.0)["rate"] > 1.0      # sad speech is slower
True
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harp_lib.core import audio
from harp_lib.corpora.synth.core import SynthCache, SynthError

__all__ = ["Voice", "VOICES", "EMOTION_PROSODY", "EMOTION_AVD", "prosody", "avd_for", "render",
           "normalize_rms"]


@dataclass(frozen=True)
class Voice:
    name: str
    flite_voice: str
    gender: str
    f0: float          # baseline mean pitch (Hz)
    f0_std: float      # baseline pitch range (Hz)
    native_f0: bool    # flite honours int_f0_target_mean for this voice


VOICES: dict[str, Voice] = {
    "slt": Voice("slt", "slt", "female", 175.0, 28.0, True),
    "rms": Voice("rms", "rms", "male", 100.0, 12.0, False),
    "awb": Voice("awb", "awb", "male", 118.0, 18.0, True),
    "kal": Voice("kal", "kal16", "male", 100.0, 14.0, True),
}

#: Prosody multipliers at full intensity (f0 level, f0 range, duration stretch, gain dB, pause s).
EMOTION_PROSODY: dict[str, dict[str, float]] = {
    "Neutral": {"f0": 1.00, "f0_std": 1.0, "rate": 1.00, "gain_db": 0.0, "pause": 0.45},
    "Happy": {"f0": 1.18, "f0_std": 1.8, "rate": 0.92, "gain_db": 2.0, "pause": 0.30},
    "Sad": {"f0": 0.86, "f0_std": 0.45, "rate": 1.28, "gain_db": -6.0, "pause": 0.90},
    "Angry": {"f0": 1.08, "f0_std": 1.6, "rate": 0.84, "gain_db": 5.0, "pause": 0.20},
    "Surprise": {"f0": 1.32, "f0_std": 2.2, "rate": 0.95, "gain_db": 3.0, "pause": 0.40},
}
#: Arousal, valence, dominance in [0, 1] at full intensity (neutral is the centre).
EMOTION_AVD: dict[str, tuple[float, float, float]] = {
    "Neutral": (0.45, 0.50, 0.50),
    "Happy": (0.72, 0.88, 0.62),
    "Sad": (0.22, 0.15, 0.28),
    "Angry": (0.88, 0.12, 0.82),
    "Surprise": (0.82, 0.62, 0.42),
}


def prosody(emotion: str, intensity: float) -> dict[str, float]:
    """Prosody of ``emotion`` at ``intensity`` in [0, 1] (0 = neutral delivery)."""
    full, neu = EMOTION_PROSODY[emotion], EMOTION_PROSODY["Neutral"]
    return {k: round(neu[k] + intensity * (full[k] - neu[k]), 4) for k in full}


def avd_for(emotion: str, intensity: float, jitter: np.ndarray) -> tuple[float, float, float]:
    """Ground-truth arousal/valence/dominance: the emotion's point scaled by intensity, plus
    a small per-utterance jitter; clipped to [0, 1], 3 decimals."""
    full, neu = np.array(EMOTION_AVD[emotion]), np.array(EMOTION_AVD["Neutral"])
    v = np.clip(neu + intensity * (full - neu) + jitter, 0.0, 1.0)
    return tuple(round(float(x), 3) for x in v)


def normalize_rms(wave: np.ndarray, target_db: float = -20.0, peak: float = 0.97) -> np.ndarray:
    """Scale to ``target_db`` dBFS RMS, then limit the peak."""
    w = np.asarray(wave, dtype=np.float64)
    r = float(np.sqrt(np.mean(w ** 2))) if w.size else 0.0
    if r > 0:
        w = w * (10 ** (target_db / 20) / r)
    m = float(np.max(np.abs(w))) if w.size else 0.0
    if m > peak:
        w = w * (peak / m)
    return w.astype(np.float32)


def _flite() -> str:
    exe = shutil.which("flite")
    if not exe:
        raise SynthError("flite is not installed (apt-get install flite); it renders the benchmark voices")
    return exe


def _run_flite(voice: Voice, text: str, f0: float, f0_std: float, stretch: float) -> np.ndarray:
    with tempfile.TemporaryDirectory(prefix="harp_tts_") as tmp:
        out = Path(tmp) / "u.wav"
        cmd = [_flite(), "-voice", voice.flite_voice,
               "--setf", f"duration_stretch={stretch:.4f}"]
        if voice.native_f0:
            cmd += ["--setf", f"int_f0_target_mean={f0:.2f}", "--setf", f"int_f0_target_stddev={f0_std:.2f}"]
        cmd += ["-t", text, "-o", str(out)]
        r = subprocess.run(cmd, capture_output=True, timeout=120)
        if r.returncode != 0 or not out.exists():
            raise SynthError(f"flite failed for voice {voice.name} on {text!r}: "
                             f"{r.stderr.decode(errors='replace').strip()}")
        return audio.load(out, sr=16000)


def render(voice: Voice, text: str, emotion: str, intensity: float, cache: SynthCache,
           *, sr: int = 16000) -> np.ndarray:
    """One sentence in ``voice`` with ``emotion`` prosody: float32 at ``sr``, -20 dBFS + gain.

    >>> import tempfile
    >>> w = render(VOICES["slt"], "Hello there.", "Happy", 1.0, SynthCache(tempfile.mkdtemp()))
    >>> 0.3 < len(w) / 16000 < 3.0
    True
    """
    p = prosody(emotion, intensity)
    inputs = {"engine": "flite", "voice": voice.name, "text": text, "prosody": p, "sr": sr}

    def make() -> np.ndarray:
        f0, f0_std, stretch = voice.f0 * p["f0"], voice.f0_std * p["f0_std"], p["rate"]
        if voice.native_f0:
            w = _run_flite(voice, text, f0, f0_std, stretch)
        else:
            # render slower by the pitch factor, then play back faster: pitch x r, same length
            r = p["f0"]
            w = _run_flite(voice, text, f0, f0_std, stretch * r)
            if abs(r - 1.0) > 1e-3:
                w = audio.resample(w, int(round(16000 * r)), 16000)
        if sr != 16000:
            w = audio.resample(w, 16000, sr)
        w = normalize_rms(w, -20.0 + p["gain_db"])
        return w

    return cache.get("tts", inputs, make)
