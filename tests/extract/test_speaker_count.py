"""Speaker-count control (issue 40): ``num_speakers`` / ``min_speakers`` / ``max_speakers`` for the
diarizer, ``harp ingest --num-speakers/--min-speakers/--max-speakers``, on real recordings: the
pyannote sample call (two real callers, reference turns in sample.rttm) and a three-voice mix (the
call between two turns of a third, flite ``awb``, voice).

Measured (collar 0.25 s): call default 2 speakers, DER 0.093; num 2: 0.093; num 3: 0.243.
Three-voice mix default 3, DER 0.097; num 3: 0.097; num 2: 0.333; max 1: 1 speaker.
"""
from __future__ import annotations

import numpy as np
import pytest

from harp_lib.core.rttm import read_rttm
from harp_lib.extract.diarization import estimate_speakers, speaker_bounds

SR = 16000
COLLAR = 0.25


@pytest.fixture(scope="module")
def recordings(sample_call, tmp_path_factory):
    """``{name: (wave, reference turns, speech regions)}`` for the call and the three-voice mix."""
    from harp_lib.core import audio
    from harp_lib.config import load_config
    from harp_lib.extract.settings import extract_settings, model_for
    from harp_testing import flite
    wav, rttm = sample_call
    call, ref = audio.load(wav, sr=SR), read_rttm(rttm)
    tmp = tmp_path_factory.mktemp("third")
    a = flite("Hello, this is the third voice on the line, calling about the order I placed last week.",
              tmp / "a.wav", "awb")
    b = flite("Thank you both, I will send the password by mail tomorrow morning, goodbye.", tmp / "b.wav", "awb")
    gap = np.zeros(SR // 2, np.float32)
    off = (len(a) + len(gap)) / SR
    mix = np.concatenate([a, gap, call, gap, b])
    end = off + (len(call) + len(gap)) / SR
    ref3 = [(0.0, len(a) / SR, "third"), *((s + off, e + off, k) for s, e, k in ref), (end, end + len(b) / SR, "third")]
    cfg = load_config(profile="mini")
    vad = model_for("vad", extract_settings(cfg, "emotion")["vad"])
    return cfg, {"call": (call, ref, vad.speech(call, SR)), "three": (mix, ref3, vad.speech(mix, SR))}


def _diarize(recordings, name, **counts):
    """``(number of speakers, DER)`` of the configured diarizer told ``counts``."""
    from harp_lib.extract.quality import der
    from harp_lib.extract.settings import extract_settings, model_for, with_speaker_counts
    cfg, recs = recordings
    wave, ref, speech = recs[name]
    spec = extract_settings(with_speaker_counts(cfg, "emotion", **counts), "emotion")["segment"]
    turns = model_for("diarization", spec).segment(wave, SR, speech=speech)
    return len({t.speaker for t in turns}), der(ref, [(t.start, t.end, t.speaker) for t in turns], collar=COLLAR)["der"]


def test_speaker_bounds_read_like_pyannote_and_refuse_bad_counts():
    assert speaker_bounds() == (1, None)
    assert speaker_bounds(3, 1, 2) == (3, 3)                      # num overrides the bounds
    assert speaker_bounds(min_speakers=2, max_speakers=5) == (2, 5)
    for bad, word in (({"num_speakers": 0}, "num_speakers"), ({"max_speakers": -1}, "max_speakers"),
                      ({"min_speakers": 2.5}, "min_speakers"), ({"num_speakers": True}, "num_speakers"),
                      ({"min_speakers": 3, "max_speakers": 2}, "above")):
        with pytest.raises(ValueError, match=word) as e:
            speaker_bounds(**bad)
        assert "\n" not in str(e.value)


def test_the_eigengap_search_keeps_to_the_bounds():
    e = np.repeat(np.eye(3), 20, axis=0) + 0.01
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    assert estimate_speakers(e, max_speakers=6) == 3
    for lo, hi in ((1, 2), (4, 6), (5, 6), (5, 5)):
        assert lo <= estimate_speakers(e, max_speakers=hi, min_speakers=lo) <= hi
    assert estimate_speakers(e[:2], max_speakers=6, min_speakers=2) == 2      # never more than the windows


@pytest.mark.slow
def test_default_and_given_counts_on_real_recordings(recordings):
    assert _diarize(recordings, "call")[0] == 2
    assert _diarize(recordings, "three")[0] == 3
    assert _diarize(recordings, "call", num_speakers=3)[0] == 3
    assert _diarize(recordings, "three", max_speakers=1)[0] == 1
    assert _diarize(recordings, "call", min_speakers=3)[0] >= 3


@pytest.mark.slow
def test_the_true_count_keeps_der_and_a_wrong_one_raises_it(recordings):
    for name, truth, wrong in (("call", 2, 3), ("three", 3, 2)):
        _, base = _diarize(recordings, name)
        n, right = _diarize(recordings, name, num_speakers=truth)
        m, bad = _diarize(recordings, name, num_speakers=wrong)
        assert (n, m) == (truth, wrong)
        assert right <= base + 0.01, (name, base, right)
        assert bad >= base + 0.1, (name, base, bad)


@pytest.mark.slow
def test_later_merges_stop_at_min_speakers(sample_call):
    """The rescaled-voice merge (the real call and a resampled copy: four clusters, two voices)
    merges down to two speakers, but never below ``min_speakers``."""
    from harp_lib.extract.diarization import window_pitch
    from test_voice_modes import _call_with_a_resampled_copy
    d, rec, emb, lab, centres, regions = _call_with_a_resampled_copy(sample_call, 0.86)
    pitch = window_pitch(rec, SR, centres)
    assert len(np.unique(d.merge_rescaled_voices(rec, SR, emb, lab, centres, regions, pitch))) == 2
    d.min_speakers = 3
    assert len(np.unique(d.merge_rescaled_voices(rec, SR, emb, lab, centres, regions, pitch))) == 3
    d.min_speakers = 4
    assert np.array_equal(d.merge_rescaled_voices(rec, SR, emb, lab, centres, regions, pitch), lab)


def test_dissolving_a_voice_mode_stops_at_min_speakers():
    from harp_lib.extract.diarization import dissolve_voice_modes
    from test_voice_modes import VOICE_F0, _scene
    emb, lab, f0, reg = _scene(np.random.default_rng(0), [VOICE_F0[v] for v in (0, 2, 1, 3)])
    assert len(np.unique(dissolve_voice_modes(emb, lab, f0, reg))) == 4
    assert np.array_equal(dissolve_voice_modes(emb, lab, f0, reg, min_speakers=5), lab)


@pytest.mark.slow
def test_reingest_with_another_count_re_extracts(sample_call, tmp_path):
    import json

    from harp_lib.core.paths import ExtractPaths
    from harp_lib.app.pipeline import config, ingest
    cfg = config("mini").with_overrides({"paths": {"data": str(tmp_path / "data")}})
    wav, _ = sample_call
    (r,) = ingest([wav], "speech", cfg=cfg, progress=False)
    assert r.error is None and r.speakers == 2
    done = ExtractPaths(tmp_path / "data" / "user" / "default" / "extract" / "emotion").stage1(r.id) / "done.json"
    key = json.loads(done.read_text())["key"]
    (r3,) = ingest([wav], "speech", cfg=cfg, progress=False, num_speakers=3)
    assert (r3.id, r3.converted, r3.speakers) == (r.id, False, 3)        # same audio, re-extracted
    key3 = json.loads(done.read_text())["key"]
    assert key3 != key and key3["segment"]["num_speakers"] == 3
    mtime = done.stat().st_mtime_ns
    (again,) = ingest([wav], "speech", cfg=cfg, progress=False, num_speakers=3)
    assert again.speakers == 3 and done.stat().st_mtime_ns == mtime      # the same count: from the cache


@pytest.mark.parametrize("args, word", [
    (["--num-speakers", "0"], "num_speakers must be a positive integer"),
    (["--num-speakers", "two"], "--num-speakers 'two'"),
    (["--min-speakers", "3", "--max-speakers", "2"], "above max_speakers"),
    (["--domain", "song", "--max-speakers", "2"], "speech and clinical"),
])
def test_a_bad_count_is_one_line_and_writes_nothing(sample_call, tmp_path, monkeypatch, capsys, args, word):
    import shutil

    from harp_lib.app.cli import main as harp
    from harp_lib.config import load_config
    shutil.copy(load_config().root / "params.yaml", tmp_path / "params.yaml")
    monkeypatch.setenv("HARP_ROOT", str(tmp_path))
    argv = ["ingest", str(sample_call[0]), *(["--domain", "speech"] if "--domain" not in args else []), *args]
    assert harp(argv) == 2
    err = capsys.readouterr().err
    assert word in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]
