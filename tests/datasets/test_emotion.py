import io
import json
import shutil

import numpy as np
import pytest

from harp_lib.core import audio
from harp_lib.corpora.datasets import load_corpus
from harp_lib.corpora.datasets.common import SourceError, check_source
from harp_lib.corpora.datasets.longemo import prepare_emotion
from harp_lib.corpora.datasets.longemo_candidates import assign_candidates, find_ct_trends
from harp_lib.corpora.datasets.longemo_params import emotion_expected
from harp_lib.corpora.datasets.longemo_source import LongEmoSource, _NanToNull, iter_all_data
from harp_lib.corpora.datasets.longemo_topics import KeywordTopics
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Query
from harp_lib.core.timespan import localize

from datasets_fixtures import EMO_PARAMS


def test_episode_selection_and_sources(emotion_src):
    src = LongEmoSource(emotion_src, EMO_PARAMS)
    assert src.check() == []
    eps, log = src.select_episodes()
    assert eps == ["MSP-PODCAST_0001", "MSP-PODCAST_0002"]
    assert {r["conversation"]: r["train"] for r in log} == {"MSP-Conversation_0001": 1, "MSP-Conversation_0002": 0}
    segs = dict(iter_all_data(emotion_src / "all_data.json"))
    assert segs["MSP-PODCAST_0001"][1]["dominance"] is None          # bare NaN in the JSON
    assert [s["n"] for s in segs["MSP-PODCAST_0002"]][:3] == ["0001", "0002", "0003"]
    times = src.utterance_times("MSP-PODCAST_0002", segs["MSP-PODCAST_0002"], 0.0)
    assert times["0009"] == (32.0, 36.0)                               # found by transcript matching
    lab = src.consensus({"MSP-PODCAST_0001"})["MSP-PODCAST_0001"]["0005"]
    assert lab["code"] == "H" and lab["cf"] == 0.75 and lab["val"] == round(5 / 6, 3)


def test_nan_filter_handles_split_tokens():
    raw = b'{"a": NaN, "b": [1, -Infinity, Infinity], "t": "NaN stays in text"}'
    stream = io.BufferedReader(_NanToNull(io.BytesIO(raw)), buffer_size=3)
    assert json.loads(stream.read()) == {"a": None, "b": [1, None, None], "t": "NaN stays in text"}


def test_trends_nms_and_flat_windows(emotion_src):
    src = LongEmoSource(emotion_src, EMO_PARAMS)
    segs = dict(iter_all_data(emotion_src / "all_data.json"))["MSP-PODCAST_0001"]
    trends = find_ct_trends(segs, src.traces("MSP-Conversation_0001"), EMO_PARAMS)
    val = [c for c in trends if c["dim"] == "Valence"]
    rising = [c for c in val if c["direction"] == "rising"]
    falling = [c for c in val if c["direction"] == "falling"]
    assert len(rising) == 1 and 6 <= rising[0]["t0"] <= 12          # NMS keeps one window per ramp
    assert len(falling) == 1 and 36 <= falling[0]["t0"] <= 42
    flat = [c for c in trends if c["direction"] == "none"]
    assert {c["dim"] for c in flat} == {"Valence", "Arousal", "Dominance"}
    for f in flat:
        assert all(f["t0"] >= c["t1"] + EMO_PARAMS.ct_nms_sec or f["t1"] <= c["t0"] - EMO_PARAMS.ct_nms_sec
                   for c in rising + falling)
    picked = assign_candidates(trends, EMO_PARAMS, np.random.default_rng(0))["change"]
    assert sum(c["direction"] == "none" for c in picked) == EMO_PARAMS.flat_slots


def test_prepared_corpus_end_to_end(emotion_out):
    out, counts = emotion_out
    c = load_corpus(out, "emotion")
    types = counts["query_types"]
    assert set(types) == {"state", "change", "comparison", "locate", "locate_hard"}, types
    segs = {s.id: s for s in c.segments}
    rec_dur = {r.id: r.duration for r in c.recordings}
    assert rec_dur == {"MSP-PODCAST_0001": 60.0, "MSP-PODCAST_0002": 60.0}
    assert "MSP-PODCAST_0001_0015" not in {q.custom.get("utterance") for q in c.queries}   # Train utterance
    for q in c.queries:
        gt, ji = q.ground_truth, q.judge_info
        assert q.gt_segment_ids, q.query_id
        if q.query_type == "state":
            seg = segs[q.gt_segment_ids[0]]
            assert gt["emotion"] == seg.labels["primary"] != "Neutral" or gt["emotion"] == "Neutral"
            assert q.custom["quote"] in seg.text and 4 <= len(q.custom["quote"].split()) <= 12
            assert localize(q.text.split(",")[0].split(". ")[1]).overlaps(seg.span)
            assert set(q.references) == {"A"}
        elif q.query_type in ("locate", "locate_hard"):
            w0, w1 = gt["window"]
            assert w0 <= gt["t0"] and gt["t1"] <= w1 and f"Between {w0} and {w1} seconds" in q.text
            assert gt["emotion"] not in ("Neutral", None)
            assert set(q.references) == ({"A", "E"} if q.query_type == "locate" else {"E"})
            assert audio.probe(out / q.references["E"]).duration <= EMO_PARAMS.emotion_clip_max_sec + 0.01
        elif q.query_type == "change":
            assert gt["direction"] in ("rising", "falling", "none") and ji["type"] == "trend"
            assert gt["direction"] == "none" or (gt["delta"] > 0) == (gt["direction"] == "rising")
        elif q.query_type == "comparison":
            va, vb = gt["values"]["A"], gt["values"]["B"]
            assert gt["winner"] == ("A" if va > vb else "B") and gt["speakers"]["A"] < gt["speakers"]["B"]
            w0, w1 = gt["window"]
            assert w1 - w0 == pytest.approx(EMO_PARAMS.multi_window_sec + EMO_PARAMS.comparison_pad_sec, abs=1)
    hard = [q for q in c.queries if q.query_type == "locate_hard"]
    assert all(q.ground_truth["n_events"] >= 3 for q in hard)
    # reference clips of speakers come from another episode
    for q in c.queries:
        if "A" in q.references:
            assert q.references["A"].startswith("references/speaker_")
    labelled = [s for s in c.segments if s.custom.get("label_source") == "consensus"]
    assert labelled and all(set(s.labels["scores"]) <= {"Neutral", "Happy", "Sad", "Angry", "Surprise"}
                            for s in labelled)


def test_deterministic_rerun(emotion_src, emotion_out, tmp_path):
    out, _ = emotion_out
    prepare_emotion(emotion_src, tmp_path / "emotion", EMO_PARAMS, progress=False)
    assert (tmp_path / "emotion/queries.jsonl").read_bytes() == (out / "queries.jsonl").read_bytes()
    assert (tmp_path / "emotion/segments.jsonl").read_bytes() == (out / "segments.jsonl").read_bytes()


def test_topic_generator_is_pluggable(emotion_src, tmp_path):
    prepare_emotion(emotion_src, tmp_path / "e", EMO_PARAMS, topic=lambda ctx: "the custom topic", progress=False)
    qs = read_jsonl(tmp_path / "e/queries.jsonl", Query)
    with_topic = [q for q in qs if q.query_type in ("state", "change", "comparison")]
    assert with_topic and all("the custom topic" in q.text for q in with_topic)
    assert KeywordTopics()("Roses and roses in the garden") == "roses and garden"


def test_missing_licensed_files_are_listed(emotion_src, tmp_path):
    src = tmp_path / "raw"
    shutil.copytree(emotion_src, src, ignore=shutil.ignore_patterns("*.flac"))
    (src / "msp_podcast_v2.0/Labels/labels_detailed.csv").unlink()
    problems = check_source(src, emotion_expected(EMO_PARAMS), "LongEmo")
    assert len(problems) == 2
    assert any("labels_detailed.csv" in m and "MSP-Podcast" in m for m in problems)
    assert any("podcasts_flac" in m and "NaturalVoices" in m for m in problems)
    with pytest.raises(SourceError, match="labels_detailed.csv"):
        prepare_emotion(src, tmp_path / "out", EMO_PARAMS, progress=False)
