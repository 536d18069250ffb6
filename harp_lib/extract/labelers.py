"""Offline domain labelers (HARP stage 2).  Each exposes ``name``, ``model_id`` and
``label(wave, sr, *, text="", speaker=None, context=None) -> dict`` with the label keys of
docs/architecture.md, plus ``label_recording(waves, sr, texts, speakers, tags) -> list[dict]``
which the pipeline calls so that per-speaker (or per-song) statistics can be used.

No model here is trained: each is a documented signal heuristic (see docs/extract.md for what
each measures and its limits).  Constants are constructor arguments whose defaults mirror
``params.yaml`` (``extract.options``).

This module holds the emotion labeler (``emotion_prosody``); the cough labeler
(``cough_burst``) is in :mod:`harp_lib.extract.cough_labeler`, the music-aesthetics labeler
(``aesthetics``) in :mod:`harp_lib.extract.aesthetics_labeler` over the measurements of
:mod:`harp_lib.extract.aesthetics_measures`.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from harp_lib.config import BackendError, register
from harp_lib.extract.embedders import egemaps_functionals

__all__ = ["EmotionProsodyLabeler"]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, x))))


# =====================================================================================
# Emotion
# =====================================================================================
_EMO_FEATS = {
    "f0": "F0semitoneFrom27.5Hz_sma3nz_amean",
    "f0range": "F0semitoneFrom27.5Hz_sma3nz_pctlrange0-2",
    "loud": "loudness_sma3_amean",
    "rate": "VoicedSegmentsPerSec",
    "hnr": "HNRdBACF_sma3nz_amean",
}
DEFAULT_PROTOTYPES = {  # (arousal, valence, dominance)
    "Neutral": (0.5, 0.5, 0.5), "Happy": (0.7, 0.8, 0.6), "Sad": (0.25, 0.2, 0.3),
    "Angry": (0.8, 0.15, 0.8), "Surprise": (0.8, 0.6, 0.45),
}


@register("labeler", "emotion_prosody")
class EmotionProsodyLabeler:
    """Arousal / valence / dominance from prosody (eGeMAPS pitch, loudness, voicing rate,
    pitch range) z-scored *per speaker* within the recording, plus lexical valence from
    vaderSentiment on the transcript; the (A, V, D) point is mapped to the nearest emotion
    prototype with softmax scores.

    Limits: relative to the speaker's own baseline (a calm speaker's loudest turn reads as
    aroused); lexical valence depends on ASR; classes beyond the five prototypes are never
    predicted.
    """
    name = "emotion_prosody"
    model_id = "eGeMAPSv02 prosody + vaderSentiment 3.3.2 (rule-based)"

    def __init__(self, arousal_w: Optional[dict] = None, dominance_w: Optional[dict] = None,
                 valence_w: Optional[dict] = None, lexical_w: float = 2.0, gain: float = 1.5,
                 prototypes: Optional[dict] = None, temperature: float = 0.02,
                 min_speaker_segments: int = 3):
        self.arousal_w = arousal_w or {"loud": 0.5, "f0": 0.4, "rate": 0.2, "f0range": 0.2}
        self.dominance_w = dominance_w or {"loud": 0.6, "f0": -0.1, "rate": 0.2, "f0range": 0.0}
        self.valence_w = valence_w or {"f0range": 0.3, "f0": 0.25, "loud": -0.1, "rate": 0.25}
        self.lexical_w, self.gain, self.temperature = lexical_w, gain, temperature
        self.prototypes = {k: tuple(v) for k, v in (prototypes or DEFAULT_PROTOTYPES).items()}
        self.min_speaker_segments = min_speaker_segments
        try:
            from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer  # a missing package is a BackendError
        except ImportError as e:
            raise BackendError("labeler 'emotion_prosody' needs vadersentiment (pip install vadersentiment)") from e
        self._vader = SentimentIntensityAnalyzer()

    def features(self, wave: np.ndarray, sr: int) -> dict[str, float]:
        f = egemaps_functionals(wave, sr)
        return {k: float(np.nan_to_num(f[col])) for k, col in _EMO_FEATS.items()}

    def lexical(self, text: str) -> float:
        return float(self._vader.polarity_scores(text or "")["compound"]) if text else 0.0

    def _from_z(self, z: dict[str, float], lex: float) -> dict:
        dot = lambda w: sum(w.get(k, 0.0) * z.get(k, 0.0) for k in w)  # noqa: E731
        a = _sigmoid(self.gain * dot(self.arousal_w))
        d = _sigmoid(self.gain * dot(self.dominance_w))
        v = _sigmoid(self.gain * dot(self.valence_w) + self.lexical_w * lex)
        names = sorted(self.prototypes)
        d2 = np.array([sum((x - p) ** 2 for x, p in zip((a, v, d), self.prototypes[n])) for n in names])
        logits = -d2 / self.temperature
        p = np.exp(logits - logits.max())
        p /= p.sum()
        scores = {n: round(float(x), 4) for n, x in zip(names, p)}
        return {"primary": names[int(np.argmax(p))], "scores": scores, "arousal": round(a, 4),
                "valence": round(v, 4), "dominance": round(d, 4)}

    def label(self, wave, sr=16000, *, text="", speaker=None, context=None) -> dict:
        """Label one clip.  ``context={"stats": {feat: [mean, std]}}`` gives the speaker's
        baseline; without it the clip is its own baseline (prosody neutral, lexical only)."""
        f = self.features(wave, sr)
        stats = (context or {}).get("stats") or {k: (v, 1.0) for k, v in f.items()}
        z = {k: (f[k] - stats[k][0]) / (stats[k][1] or 1.0) for k in f}
        return self._from_z(z, self.lexical(text))

    #: per-clip ``features`` may be computed in other processes (harp_lib.extract.turn_steps.label_turns)
    parallel_features = True

    def features_of(self, waves: Sequence[np.ndarray], sr: int) -> list[dict[str, float]]:
        return [self.features(w, sr) for w in waves]

    def label_recording(self, waves: Sequence[np.ndarray], sr: int, texts: Sequence[str],
                        speakers: Sequence[Optional[str]], tags=None, feats=None) -> list[dict]:
        """Per-speaker z-scored prosody (``feats``: :meth:`features_of` of ``waves``, when computed already)."""
        feats = self.features_of(waves, sr) if feats is None else list(feats)
        keys = list(_EMO_FEATS)
        allf = np.array([[f[k] for k in keys] for f in feats]) if feats else np.zeros((0, len(keys)))
        out = []
        spk = np.array([s or "" for s in speakers])
        for i, f in enumerate(feats):
            grp = allf[spk == spk[i]]
            if len(grp) < self.min_speaker_segments:
                grp = allf
            mu, sd = grp.mean(0), grp.std(0)
            z = {k: float((f[k] - mu[j]) / sd[j]) if sd[j] > 1e-6 else 0.0 for j, k in enumerate(keys)}
            out.append(self._from_z(z, self.lexical(texts[i])))
        return out
