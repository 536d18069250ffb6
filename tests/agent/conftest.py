"""Session fixtures for the agent tests (helpers live in agent_helpers.py)."""
from __future__ import annotations

import numpy as np
import pytest

from agent_helpers import (SR, FakeAudioEmbedder, FakeTextEmbedder, emo_labels, emotion_queries,  # noqa: F401
                           tone)
from harp_lib.core import audio
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.schema import Recording, Segment


@pytest.fixture(scope="session")
def emotion_bench(tmp_path_factory):
    """One 90 s emotion recording: speaker S0 at 440 Hz (Happy), S1 at 150 Hz (Sad)."""
    root = tmp_path_factory.mktemp("bench") / "emotion"
    (root / "recordings").mkdir(parents=True)
    (root / "references").mkdir()
    plan = [(0, 10, "S0", 300, "we planted a garden last spring", emo_labels("Neutral", 0.4)),
            (10, 20, "S1", 150, "the rain ruined the holiday", emo_labels("Sad", 0.2)),
            (20, 30, "S0", 440, "I got the job and I am thrilled", emo_labels("Happy", 0.8)),
            (30, 40, "S1", 150, "my dog is sick", emo_labels("Sad", 0.25)),
            (40, 50, "S0", 440, "pizza night with music", emo_labels("Happy", 0.85)),
            (50, 60, "S1", 300, "the garden needs rain", emo_labels("Neutral", 0.45)),
            (60, 75, "S0", 440, "holiday plans are exciting", emo_labels("Happy", 0.9)),
            (75, 90, "S1", 150, "job hunting is hard", emo_labels("Sad", 0.1))]
    wave = np.concatenate([tone(e - s, f) for s, e, _, f, _, _ in plan])
    audio.write(root / "recordings" / "r1.wav", wave, SR)
    audio.write(root / "references" / "spk_a.wav", tone(3, 440), SR)
    audio.write(root / "references" / "spk_b.wav", tone(3, 150), SR)
    audio.write(root / "references" / "emo_happy.wav", tone(2, 440), SR)
    segs = [Segment(f"r1_ext_{i:04d}", "r1", s, e, spk, txt, lab, source="extracted")
            for i, (s, e, spk, f, txt, lab) in enumerate(plan)]
    gt = [Segment(f"r1_{i:04d}", "r1", s, e, spk, txt, lab) for i, (s, e, spk, f, txt, lab) in enumerate(plan)]
    rec = Recording("r1", "emotion", "recordings/r1.wav", 90.0)
    te, ae = FakeTextEmbedder(), FakeAudioEmbedder()
    waves = [audio.read_window(root / "recordings" / "r1.wav", s.span) for s in segs]
    vectors = {"text": te.embed([s.text for s in segs]), "audio": ae.embed(waves), "domain": ae.embed(waves)}
    spaces = {"text": {"backend": "fake_text", "model": "bow-v1"},
              "audio": {"backend": "fake_audio", "model": "bands-v1"},
              "domain": {"backend": "fake_audio", "model": "bands-v1"}}
    index = SegmentIndex.from_segments(segs, vectors, spaces)
    write_jsonl(root / "recordings.jsonl", [rec])
    write_jsonl(root / "segments.jsonl", gt)
    return {"root": root, "rec": rec, "segs": segs, "gt": gt, "index": index,
            "embedders": {"text": te, "audio": ae, "domain": ae}}


@pytest.fixture(scope="session")
def emotion_queries_written(emotion_bench):
    qs = emotion_queries()
    write_jsonl(emotion_bench["root"] / "queries.jsonl", qs)
    return qs
