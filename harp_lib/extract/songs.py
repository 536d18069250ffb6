"""Song boundaries in a medley: librosa timbre/harmony features on sliding windows ->
ruptures KernelCPD (rbf kernel) with the paper's minimum song length, then each boundary is
refined at a finer step by the largest left/right feature contrast.

Measures: where the music changes piece (instrumentation, key, texture).  Limits: two
consecutive songs with the same instrument and key can be missed; songs shorter than
``min_song_sec`` cannot be found (by design, as the paper); the penalty trades missed
boundaries against false ones.

>>> from harp_lib.extract.songs import window_times
>>> window_times(30.0, 10.0, 2.0)[:3].tolist()
[0.0, 2.0, 4.0]
"""
from __future__ import annotations

import numpy as np

from ..config import register
from .turns import Turn

__all__ = ["KernelCPDSongs", "frame_features", "window_times"]

_HOP = 512  # librosa hop at 16 kHz = 32 ms frames


def window_times(duration: float, win_sec: float, hop_sec: float) -> np.ndarray:
    """Start times of ``win_sec`` windows every ``hop_sec`` seconds (at least one)."""
    n = max(1, int(np.floor(max(0.0, duration - win_sec) / hop_sec)) + 1)
    return np.arange(n) * hop_sec


def frame_features(wave: np.ndarray, sr: int) -> tuple[np.ndarray, float]:
    """Per-frame features (log-mel 64, MFCC 2-20, chroma 12, spectral contrast 7), fps."""
    import librosa
    wave = np.asarray(wave, dtype=np.float32)
    S = np.abs(librosa.stft(wave, n_fft=2048, hop_length=_HOP)) ** 2
    mel = librosa.feature.melspectrogram(S=S, sr=sr, n_mels=64)
    logmel = librosa.power_to_db(mel + 1e-10, ref=1.0, top_db=None)
    mfcc = librosa.feature.mfcc(S=logmel, n_mfcc=20)[1:]
    chroma = librosa.feature.chroma_stft(S=S, sr=sr)
    contrast = librosa.feature.spectral_contrast(S=np.sqrt(S), sr=sr)
    feats = np.vstack([logmel / 10.0, mfcc / 10.0, chroma * 3.0, contrast / 10.0]).T
    return feats.astype(np.float32), sr / _HOP


def _pool(feats: np.ndarray, fps: float, starts: np.ndarray, win: float) -> np.ndarray:
    out = []
    n = len(feats)
    for s in starts:
        a, b = int(s * fps), max(int(s * fps) + 1, int((s + win) * fps))
        blk = feats[a:min(b, n)] if a < n else feats[-1:]
        out.append(np.concatenate([blk.mean(0), blk.std(0)]))
    return np.asarray(out, dtype=np.float64)


@register("song_boundaries", "kernel_cpd")
class KernelCPDSongs:
    """Medley -> songs ``SONG_01, SONG_02, ...`` (1-based) by kernel change-point detection."""
    name = "kernel_cpd"
    model_id = "librosa features + ruptures KernelCPD(rbf)"

    def __init__(self, min_song_sec: float = 90.0, win_sec: float = 10.0, hop_sec: float = 2.0,
                 pen: float = 4.0, refine_sec: float = 6.0, refine_win_sec: float = 8.0,
                 refine_hop_sec: float = 0.25):
        self.min_song_sec, self.win_sec, self.hop_sec, self.pen = min_song_sec, win_sec, hop_sec, pen
        self.refine_sec, self.refine_win_sec, self.refine_hop_sec = refine_sec, refine_win_sec, refine_hop_sec

    def boundaries(self, wave: np.ndarray, sr: int = 16000) -> list[float]:
        """Boundary times (s) between songs, sorted."""
        import ruptures as rpt
        dur = len(wave) / sr
        feats, fps = frame_features(wave, sr)
        starts = window_times(dur, self.win_sec, self.hop_sec)
        min_size = max(1, int(self.min_song_sec / self.hop_sec))
        if len(starts) < 2 * min_size:
            return []
        x = _pool(feats, fps, starts, self.win_sec)
        x = (x - x.mean(0)) / (x.std(0) + 1e-6)
        x /= np.linalg.norm(x, axis=1, keepdims=True) + 1e-12
        bkps = rpt.KernelCPD(kernel="rbf", min_size=min_size).fit(x).predict(pen=self.pen)[:-1]
        coarse = [float(starts[b] + self.win_sec / 2 - self.hop_sec / 2) for b in bkps]
        return [self._refine(feats, fps, b, dur) for b in coarse]

    def _refine(self, feats: np.ndarray, fps: float, t: float, dur: float) -> float:
        w = self.refine_win_sec
        cands = np.arange(max(w, t - self.refine_sec), min(dur - w, t + self.refine_sec) + 1e-9,
                          self.refine_hop_sec)
        if len(cands) == 0:
            return t
        mu, sd = feats.mean(0), feats.std(0) + 1e-6
        z = (feats - mu) / sd
        scores = []
        for c in cands:
            a, m, b = int((c - w) * fps), int(c * fps), int((c + w) * fps)
            scores.append(np.linalg.norm(z[a:m].mean(0) - z[m:b].mean(0)))
        return float(cands[int(np.argmax(scores))])

    def segment(self, wave: np.ndarray, sr: int = 16000, speech=None) -> list[Turn]:
        """Songs as turns tagged ``SONG_NN`` (1-based, in time order)."""
        dur = len(wave) / sr
        edges = [0.0, *self.boundaries(wave, sr), dur]
        return [Turn(a, b, f"SONG_{i + 1:02d}") for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])) if b > a]
