"""Hand-built fixtures for the agent tests: tiny recordings, segment tables, fake embedders and
labelers (deterministic, no model weights), so every tool and setup runs in milliseconds."""
from __future__ import annotations

import os
import re

import numpy as np

from harp_lib.core.schema import Query
from harp_testing import tone  # noqa: F401  (the shared helper: tone(sec, freq))

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SR = 16000
VOCAB = ("cough", "breath", "chest", "garden", "pizza", "holiday", "rain", "job", "music", "dog")


class FakeTextEmbedder:
    """Bag of words over :data:`VOCAB` (plus a bias so empty text is not a zero vector)."""
    name, model_id, dim = "fake_text", "bow-v1", len(VOCAB) + 1

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            toks = re.findall(r"[a-z]+", t.lower())
            for j, w in enumerate(VOCAB):
                out[i, j] = sum(tok.startswith(w) for tok in toks)
            out[i, -1] = 0.1
        return out


class FakeAudioEmbedder:
    """Energy in 8 log-spaced bands: tones of different pitch get different vectors."""
    name, model_id, dim = "fake_audio", "bands-v1", 8

    def embed(self, waves, sr=SR):
        edges = np.geomspace(50, 8000, 9)
        out = np.zeros((len(waves), self.dim), np.float32)
        for i, w in enumerate(waves):
            spec = np.abs(np.fft.rfft(np.asarray(w, np.float64)[: sr * 4]))
            f = np.fft.rfftfreq(min(len(w), sr * 4), 1 / sr)
            out[i] = [spec[(f >= a) & (f < b)].sum() for a, b in zip(edges[:-1], edges[1:])]
        return out


class FakeEmotionLabeler:
    """'Hears' emotion from pitch: >= 400 Hz Happy, <= 200 Hz Sad, else Neutral; arousal = pitch."""
    name = "fake_emotion"

    def label(self, wave, sr=SR, *, text="", speaker=None, context=None):
        w = np.asarray(wave, np.float64)
        if not len(w):
            return {}
        f = np.fft.rfftfreq(len(w), 1 / sr)[int(np.argmax(np.abs(np.fft.rfft(w))))]
        prim = "Happy" if f >= 400 else "Sad" if f <= 200 else "Neutral"
        a = float(min(1.0, f / 800))
        return {"primary": prim, "scores": {prim: 0.9}, "arousal": round(a, 3),
                "valence": round(a, 3), "dominance": 0.5}


def emo_labels(prim, a, v=None, d=0.5):
    return {"primary": prim, "scores": {prim: 0.8}, "arousal": a, "valence": a if v is None else v, "dominance": d}


def emotion_queries():
    """One query per emotion type, following docs/architecture.md and the paper's templates."""
    return [
        Query("e_state", "emotion", "r1", "state",
              'Speaker: [audio example]. Around 25 seconds, this speaker was talking about their new job '
              'and mentioned "I got the job". Which emotion(s) did they show?',
              {"emotion": "Happy"}, references={"A": "references/spk_a.wav"},
              gt_segment_ids=("r1_0002",), time_ref=25.0),
        Query("e_change", "emotion", "r1", "change",
              "Speaker: [audio example]. From 40 to 90 seconds, how did this speaker's arousal change "
              "while discussing holiday plans?",
              {"direction": "falling", "dimension": "arousal", "t0": 40.0, "t1": 90.0},
              references={"A": "references/spk_a.wav"}, gt_segment_ids=("r1_0004", "r1_0005", "r1_0006", "r1_0007"),
              time_ref=40.0),
        Query("e_comp", "emotion", "r1", "comparison",
              "Speaker A: [A's audio example]. Speaker B: [B's audio example]. From 0 to 60 seconds, "
              "discussing gardening, which speaker had higher arousal, A or B?",
              {"winner": "A", "dimension": "arousal", "t0": 0.0, "t1": 60.0},
              references={"A": "references/spk_a.wav", "B": "references/spk_b.wav"},
              gt_segment_ids=("r1_0000", "r1_0001", "r1_0002", "r1_0003"), time_ref=0.0,
              custom={"speakers": {"A": "S0", "B": "S1"}}),
        Query("e_locate", "emotion", "r1", "locate",
              "Speaker: [speaker example]. Emotion: [emotion example]. Between 30 and 90 seconds, when did "
              "this speaker show the same emotion as the clip, and what were they saying?",
              {"t0": 40.0, "t1": 50.0, "emotion": "Happy", "quote": "pizza night"},
              references={"A": "references/spk_a.wav", "E": "references/emo_happy.wav"},
              gt_segment_ids=("r1_0004",), time_ref=30.0),
        Query("e_locate_hard", "emotion", "r1", "locate_hard",
              "Emotion: [audio example]. Between 55 and 90 seconds, when did someone show the same emotion "
              "as the clip, and what were they saying?",
              {"t0": 60.0, "t1": 75.0, "emotion": "Happy", "quote": "holiday plans", "n_events": 3},
              references={"E": "references/emo_happy.wav"}, gt_segment_ids=("r1_0006",), time_ref=55.0),
    ]


