"""The ci benchmark: schema, ground truth, references, determinism."""
import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from harp_lib.core import audio
from harp_lib.core.labels import AESTHETIC_DIMENSIONS, EMOTIONS, cough_label, tier_of
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import QUERY_TYPES, Query, Recording, Segment
from harp_lib.corpora.synth import Manifest, generate, rules, validate_domain
from harp_lib.corpora.synth.core import SynthError, load_params

ROLES = {"state": {"A"}, "change": {"A"}, "comparison": {"A", "B"}, "locate": {"A", "E"},
         "locate_hard": {"E"}, "reported": set(), "exhibited": set(), "time": set(), "position": set(),
         "audio": {"A", "B"}}
JUDGE = {"state": "categorical", "change": "trend", "comparison": "speaker_id", "locate": "time_and_quote",
         "locate_hard": "time_and_quote", "reported": "yes_no", "exhibited": "yes_no", "time": "pairwise",
         "position": "pairwise", "audio": "pairwise"}


def _load(root: Path, domain: str):
    d = root / domain
    return (read_jsonl(d / "recordings.jsonl", Recording), read_jsonl(d / "segments.jsonl", Segment),
            read_jsonl(d / "queries.jsonl", Query))


def _hashes(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "timings.json"}


def test_all_ten_query_types_with_ids_truth_and_judge_info(ci_bench):
    root, man = ci_bench
    seen = {}
    for domain in ("emotion", "clinical", "song"):
        validate_domain(root / domain, domain)
        recs, segs, qs = _load(root, domain)
        seg_ids = {s.id for s in segs}
        for q in qs:
            assert re.fullmatch(rf"{q.query_type}-\d{{4}}", q.query_id)
            assert q.ground_truth and q.judge_info["type"] == JUDGE[q.query_type]
            assert set(q.references) == ROLES[q.query_type], q.query_id
            assert all((root / domain / r).exists() for r in q.references.values())
            assert set(q.gt_segment_ids) <= seg_ids
            assert "around around" not in q.text
            seen[q.query_type] = seen.get(q.query_type, 0) + 1
    assert set(seen) == set(QUERY_TYPES)
    assert min(seen.values()) >= 3, seen
    assert man.counts["emotion"]["queries"] == {t: seen[t] for t in sorted(seen) if t in ROLES and
                                                 t in ("state", "change", "comparison", "locate", "locate_hard")}


def test_layout_ids_and_audio(ci_bench):
    root, man = ci_bench
    for domain in ("emotion", "clinical", "song"):
        recs, segs, _ = _load(root, domain)
        for r in recs:
            info = audio.probe(root / domain / r.audio_path)
            assert (info.sample_rate, info.channels) == (16000, 1)
        for s in segs:
            assert s.source == "gt" and re.fullmatch(rf"{re.escape(s.recording_id)}_\d{{4}}", s.id)
    assert 2.0 < man.audio_minutes["total"] < 10.0
    timings = json.loads((root / "timings.json").read_text())
    assert timings["seconds"]["total"] > 0
    text = (root / "manifest.json").read_text()
    assert "seconds" not in text and "time" not in json.loads(text)
    assert set(man.files) == set(_hashes(root)) - {"manifest.json"}


def test_emotion_ground_truth_follows_the_rules(ci_bench):
    root, _ = ci_bench
    p = load_params("ci")["emotion"]
    recs, segs, qs = _load(root, "emotion")
    by_id = {s.id: s for s in segs}
    utts = [rules.Utt(s.id, s.speaker, s.start, s.end, s.labels["primary"],
                      (s.labels["arousal"], s.labels["valence"], s.labels["dominance"]), s.text) for s in segs]
    assert len({s.speaker for s in segs}) >= 3
    for s in segs:
        assert s.labels["primary"] in EMOTIONS and all(0 <= s.labels[k] <= 1 for k in ("arousal", "valence", "dominance"))
    for q in qs:
        gt = q.ground_truth
        if q.query_type == "state":
            s = by_id[q.gt_segment_ids[0]]
            assert gt["emotion"] == s.labels["primary"] and gt["valence"] == s.labels["valence"]
            quote = re.search(r'"(.+)"', q.text).group(1)
            assert quote in s.text and sum(quote in x.text for x in segs) == 1
        elif q.query_type == "change":
            spk = by_id[q.gt_segment_ids[0]].speaker
            h1, h2, d = rules.half_means(utts, spk, gt["dimension"], gt["t0"], gt["t1"])
            assert gt["direction"] == rules.trend_direction(d, min_delta=p["trend_min_delta"], flat_max=p["flat_max_delta"])
            assert gt["half1"] == pytest.approx(h1, abs=1e-3)
        elif q.query_type == "comparison":
            a, b = q.custom["speakers"]["A"], q.custom["speakers"]["B"]
            assert a < b and q.references["A"].endswith(f"_{a}.wav") and q.references["B"].endswith(f"_{b}.wav")
            va = rules.speaker_mean(utts, a, gt["dimension"], gt["t0"], gt["t1"])
            vb = rules.speaker_mean(utts, b, gt["dimension"], gt["t0"], gt["t1"])
            assert gt["winner"] == ("A" if va > vb else "B") and abs(va - vb) > p["comparison_min_spread"]
        elif q.query_type in ("locate", "locate_hard"):
            target = [by_id[i] for i in q.gt_segment_ids if gt["t0"] <= by_id[i].start < gt["t1"]]
            assert target and all(s.labels["primary"] == gt["emotion"] for s in target)
            spk = target[0].speaker
            emo_voice = re.search(r"emotion_.+_(\w+)\.wav$", q.references["E"]).group(1)
            assert emo_voice != spk and f"_{gt['emotion']}_" in q.references["E"]
            w0, w1 = (float(x) for x in re.search(r"From ([\d.]+) to ([\d.]+) seconds", q.text).groups())
            assert w0 <= gt["t0"] < gt["t1"] <= w1
            same = [s for s in segs if s.speaker == spk and s.labels["primary"] == gt["emotion"]
                    and s.start >= w0 and s.end <= w1]
            if q.query_type == "locate":    # exactly one event of this speaker + emotion in the window
                assert {s.id for s in same} == set(q.gt_segment_ids)
            else:
                assert gt["n_events"] >= 3 and len(gt["events"]) == gt["n_events"]
    # speaker references say other words than the recording
    for r in recs:
        for spk in r.custom["speakers"]:
            assert (root / "emotion" / f"references/speaker_{r.id}_{spk}.wav").exists()


def test_emotion_prosody_is_audible(ci_bench):
    root, _ = ci_bench
    recs, segs, _ = _load(root, "emotion")
    wave = audio.load(root / "emotion" / recs[0].audio_path)
    level = {}
    rate = {}
    for s in segs:
        w = wave[int(s.start * 16000):int(s.end * 16000)]
        level.setdefault(s.labels["primary"], []).append(audio.rms_db(w))
        rate.setdefault(s.labels["primary"], []).append(len(s.text.split()) / s.duration)
    from harp_lib.corpora.synth.voices import EMOTION_PROSODY
    present = sorted(level, key=lambda e: EMOTION_PROSODY[e]["gain_db"])
    loud, soft = present[-1], present[0]
    gap = EMOTION_PROSODY[loud]["gain_db"] - EMOTION_PROSODY[soft]["gain_db"]
    assert gap >= 5, present                     # the ci podcast holds emotions far apart
    assert np.mean(level[loud]) > np.mean(level[soft]) + gap / 2
    fast, slow = sorted(rate, key=lambda e: EMOTION_PROSODY[e]["rate"])[0], sorted(rate, key=lambda e: EMOTION_PROSODY[e]["rate"])[-1]
    assert np.mean(rate[fast]) > np.mean(rate[slow])


def test_synth_doctests():
    import doctest
    from harp_lib.corpora.synth import core, emotion, rules as r, song, text, voices
    for mod in (core, emotion, r, song, text, voices):
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert res.failed == 0, mod.__name__


def test_clinical_segment_level_ground_truth(ci_bench):
    root, _ = ci_bench
    recs, segs, qs = _load(root, "clinical")
    by_id = {s.id: s for s in segs}
    for s in segs:
        assert s.labels["primary"] == cough_label(s.labels["cough_count"])
    roles = {s.custom["role"] for s in segs}
    assert "doctor" in roles
    for q in qs:
        rec_segs = [s for s in segs if s.recording_id == q.recording_id]
        assert len({s.speaker for s in rec_segs}) == 2
        yes = q.ground_truth["answer"] == "Yes"
        if q.query_type == "reported":
            assert yes == any(s.labels["symptoms"] for s in rec_segs)
            assert all(by_id[i].labels["symptoms"] for i in q.gt_segment_ids)
        else:
            assert yes == any(s.labels["events"] for s in rec_segs)
            assert set(q.gt_segment_ids) == {s.id for s in rec_segs if s.labels["events"]} if yes else not q.gt_segment_ids
    # real coughs are loud bursts, well above the noise floor
    coughs = [s for s in segs if s.labels["cough_count"] > 0]
    assert coughs
    s = coughs[0]
    rec = next(r for r in recs if r.id == s.recording_id)
    w = audio.load(root / "clinical" / rec.audio_path, start=s.start, end=s.end)
    assert audio.rms_db(w) > -35


def test_song_ground_truth_and_pairs(ci_bench):
    root, _ = ci_bench
    p = load_params("ci")
    recs, segs, qs = _load(root, "song")
    songs = sorted(segs, key=lambda s: s.start)
    for i, s in enumerate(songs, start=1):
        assert s.speaker == f"SONG_{i:02d}" and set(s.labels["scores"]) == set(AESTHETIC_DIMENSIONS)
        assert s.labels["overall"] == pytest.approx(np.mean(list(s.labels["scores"].values())), abs=1e-3)
        assert s.labels["primary"] == tier_of(s.labels["overall"])
    for a, b in zip(songs, songs[1:]):    # consecutive songs overlap by the 3 s crossfade
        assert a.end - b.start == pytest.approx(p["crossfade_sec"], abs=0.01)
    for q in qs:
        sa, sb = songs[q.judge_info["song_a"] - 1], songs[q.judge_info["song_b"] - 1]
        assert q.gt_segment_ids == (sa.id, sb.id)
        assert q.ground_truth["winner"] == rules.pairwise_winner(sa.labels["overall"], sb.labels["overall"],
                                                                 tie_delta=p["tie_delta"])
        assert sa.start <= q.time_ref <= sa.end
        if q.query_type == "audio":
            clip = audio.probe(root / "song" / q.references["A"])
            assert clip.duration == pytest.approx(p["snippet_sec"], abs=0.01)


@pytest.mark.slow
def test_same_seed_is_byte_identical_and_other_seed_differs(ci_bench, synth_cache, tmp_path):
    root, man = ci_bench
    again = generate("ci", 0, tmp_path / "again", cache_dir=synth_cache, progress=False)
    assert _hashes(tmp_path / "again") == _hashes(root)
    assert again.to_dict() == man.to_dict()
    # a fresh, empty cache gives the same bytes (the cache only saves work)
    fresh = generate("ci", 0, tmp_path / "fresh", cache_dir=tmp_path / "empty_cache",
                     domains=["clinical"], progress=False)
    assert fresh.files == {k: v for k, v in man.files.items() if k.startswith("clinical/")}
    other = generate("ci", 1, tmp_path / "seed1", cache_dir=synth_cache, domains=["clinical", "emotion"],
                     progress=False)
    for d in ("clinical", "emotion"):
        assert other.files[f"{d}/queries.jsonl"] != man.files[f"{d}/queries.jsonl"]
        assert other.files[f"{d}/recordings/{'consult_001' if d == 'clinical' else 'podcast_01'}.wav"] != \
            man.files[f"{d}/recordings/{'consult_001' if d == 'clinical' else 'podcast_01'}.wav"]


def test_validation_catches_a_missing_reference(ci_bench, tmp_path):
    import shutil
    root, _ = ci_bench
    shutil.copytree(root / "song", tmp_path / "song")
    next((tmp_path / "song" / "references").glob("*.wav")).unlink()
    with pytest.raises(SynthError, match="reference"):
        validate_domain(tmp_path / "song", "song")


def test_unknown_profile_is_refused(tmp_path):
    with pytest.raises(SynthError, match="unknown benchmark profile"):
        generate("huge", 0, tmp_path)


def test_cli_writes_and_summarises(ci_bench, synth_cache, tmp_path, capsys):
    from harp_lib.app.cli import main
    rc = main(["synth", "--profile", "ci", "--seed", "0", "--out", str(tmp_path / "b"), "--cache-dir", str(synth_cache),
               "--domains", "clinical", "--quiet"])
    assert rc == 0
    assert "clinical" in capsys.readouterr().out
    assert Manifest.read(tmp_path / "b" / "manifest.json").counts["clinical"]["queries"] == {"exhibited": 3, "reported": 3}
