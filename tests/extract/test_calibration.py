"""Labeler calibration: emotion follows the voice when the words carry no emotion."""
from __future__ import annotations

import itertools
import shutil
import subprocess
from collections import Counter

import numpy as np
import pytest

from harp_lib.core import audio
from harp_lib.config import create_backend, load_config

SENTENCE = "The meeting is scheduled for Tuesday at three o'clock in the main office."


@pytest.mark.skipif(not shutil.which("espeak-ng"), reason="espeak-ng not installed (scripts/bootstrap.sh)")
def test_emotion_on_one_neutral_sentence_follows_pitch_rate_and_loudness(tmp_path):
    opts = dict(load_config().extract["options"]["emotion_prosody"])
    lab = create_backend("labeler", {"name": "emotion_prosody", **opts})
    assert lab.lexical(SENTENCE) == 0.0                     # the words carry no emotion
    waves, conds = [], []
    for p, s, a in itertools.product((25, 50, 85), (120, 230), (60, 160)):
        f = tmp_path / f"{p}_{s}_{a}.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-p", str(p), "-s", str(s), "-a", str(a), "-w", str(f), SENTENCE],
                       check=True)
        waves.append(audio.load(f, sr=16000))
        conds.append((p, s, a))
    out = lab.label_recording(waves, 16000, [SENTENCE] * len(waves), ["v"] * len(waves))
    labels = Counter(o["primary"] for o in out)
    assert len(labels) >= 3 and max(labels.values()) <= 0.75 * len(out), labels   # spread, not one class
    ar = np.array([o["arousal"] for o in out])
    c = np.array(conds, float)
    assert np.corrcoef(c[:, 0], ar)[0, 1] > 0.4 and np.corrcoef(c[:, 2], ar)[0, 1] > 0.4
    by = {cd: o for cd, o in zip(conds, out)}
    low, high = by[(25, 120, 60)], by[(85, 230, 160)]
    assert low["arousal"] < high["arousal"] and low["primary"] != high["primary"]
    assert low["primary"] in ("Sad", "Neutral") and high["primary"] in ("Happy", "Angry", "Surprise")
