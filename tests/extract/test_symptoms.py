"""Reported-symptom keyword spotting (pocketsphinx KWS) on real synthetic speech."""
from __future__ import annotations

import numpy as np

from harp_lib.config import create_backend
from harp_lib.extract.quality import symptom_metrics
from harp_lib.extract.symptoms import negated_or_question
from harp_lib.core.schema import Recording, Segment
from harp_testing import flite


def _pad(w):
    z = np.zeros(8000, np.float32)
    return np.concatenate([z, w, z]) + (np.random.default_rng(0).standard_normal(len(w) + 16000) * 1e-3).astype(np.float32)


def test_kws_spots_symptoms_and_marks_negations(tmp_path):
    lab = create_backend("labeler", "symptom_kws")
    cough = _pad(flite("I keep coughing, and my throat is really sore in the mornings.", tmp_path / "a.wav", "slt"))
    deny = _pad(flite("No, no cough at all, my chest is fine.", tmp_path / "b.wav", "rms"))
    plain = _pad(flite("Water them every morning and give the plants plenty of sunshine.", tmp_path / "c.wav", "slt"))
    out = lab.label_recording([cough, deny, plain], 16000,
                              ["i keep coughing", "no no cough at all my chest is fine", "water them every morning"],
                              [None] * 3, offsets=[10.0, 20.0, 30.0], pads=[0.0] * 3)
    assert "cough" in out[0]["symptoms"], out[0]
    assert all(10.0 <= h[1] < h[2] <= 10.0 + len(cough) / 16000 for h in out[0]["symptom_hits"])
    assert out[1]["symptoms"] == [] and "cough" in out[1]["symptoms_negated"], out[1]
    assert out[2]["symptoms"] == [], out[2]


def test_negation_and_question_cues():
    assert negated_or_question("have you had a cough or a sore throat")
    assert negated_or_question("not really no sore throat")
    assert not negated_or_question("my son has had a barking cough for three nights")


def test_symptom_metrics_count_turn_level_hits_and_misses():
    rec = Recording("r", "clinical", "recordings/r.wav", 30.0)
    gt = {"r": [Segment("r_0001", "r", 0, 5, "a", "I keep coughing", labels={"symptoms": ["cough"]}),
                Segment("r_0002", "r", 5, 10, "b", "Any cough?", labels={"symptoms": []}),
                Segment("r_0003", "r", 10, 15, "a", "It hurts", labels={"symptoms": ["sore throat"]})]}
    ext = {"r": [Segment("r_ext_0000", "r", 0, 5, "S0", "i keep it costs", labels={"symptoms": ["cough"]}),
                 Segment("r_ext_0001", "r", 5, 10, "S1", "any cough", labels={"symptoms": ["cough"]}),
                 Segment("r_ext_0002", "r", 10, 15, "S0", "it hurts", labels={"symptoms": []})]}
    m = symptom_metrics([rec], gt, ext)
    assert m["symptom_kws"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "tp": 1, "fp": 1, "fn": 1}
    assert m["symptom_asr_baseline"]["tp"] == 0 and m["symptom_asr_baseline"]["fp"] == 1
    assert m["symptom_recording_accuracy"] == 1.0
