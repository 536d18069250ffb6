"""The tuned detectors on small real audio: back-to-back coughs, noise-excited voices,
the VAD's energy pass, song boundaries between same-instrument pieces, ASR decoder options."""
import numpy as np
import pytest

from harp_lib.core import audio
from harp_lib.config import BackendError, create_backend
from harp_lib.extract.cough_labeler import detect_coughs
from harp_lib.extract.quality import boundary_f1, frame_f1

def _conftest():
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("extract_conftest", Path(__file__).with_name("conftest.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_C = _conftest()
SCRATCH, _render, flite = _C.SCRATCH, _C._render, _C.flite

SR = 16000


def _noise(sec, rng):
    return (rng.standard_normal(int(sec * SR)) * 10 ** (-62 / 20)).astype(np.float32)


@pytest.fixture(scope="module")
def cough_male():
    return audio.load(SCRATCH / "Cough-male.wav", sr=SR) * 0.8


@pytest.fixture(scope="module")
def breathy_speech(tmp_path_factory):
    """A flite sentence turned breathy and a hoarse one (the benchmark's voice-quality filters)."""
    from harp_lib.corpora.synth.clinical import breathy, hoarse
    w = flite("I have been feeling tired and my throat hurts when I swallow.",
              tmp_path_factory.mktemp("vq") / "b.wav", "slt")
    rng = np.random.default_rng(0)
    return breathy(w, rng), hoarse(w, rng)


def test_back_to_back_coughs_are_counted_separately(cough_male):
    rng = np.random.default_rng(1)
    parts = [_noise(0.5, rng)]
    for gap in (0.2, 0.3, 0.0):                      # three coughs, 0.2 s and 0.3 s apart
        parts += [cough_male, _noise(gap, rng)] if gap else [cough_male]
    parts.append(_noise(0.5, rng))
    ev = detect_coughs(np.concatenate(parts), SR)
    assert len(ev) == 3, ev
    assert all(b - a >= 0.35 for a, b in ev)


def test_noise_excited_voices_and_clean_speech_are_not_coughs(breathy_speech, speech_bench):
    rng = np.random.default_rng(2)
    for w in breathy_speech:                         # flat, hiss-like spectrum: not a cough
        assert detect_coughs(np.r_[_noise(0.5, rng), w, _noise(0.5, rng)], SR) == []
    wave = audio.load(speech_bench / "emotion" / "recordings" / "rec1.wav", sr=SR)
    assert detect_coughs(wave, SR) == []             # four sentences after pauses: no false alarm
    feats = detect_coughs(wave, SR, return_features=True)
    assert all(set(f) >= {"flatness", "centroid", "duration"} for _, _, f in feats)


def test_energy_pass_rescues_breathy_speech_but_not_coughs(breathy_speech, cough_male):
    rng = np.random.default_rng(3)
    w = breathy_speech[0]
    wave = np.concatenate([_noise(1.0, rng), w, _noise(1.0, rng), cough_male, _noise(0.25, rng), cough_male,
                           _noise(1.0, rng)])
    ref = [(1.0, 1.0 + len(w) / SR)]
    dur = len(wave) / SR
    plain = create_backend("vad", "silero").speech(wave, SR)
    rescued = create_backend("vad", "silero_rescue").speech(wave, SR)
    f_plain = frame_f1(ref, [(s.start, s.end) for s in plain], dur)
    f_resc = frame_f1(ref, [(s.start, s.end) for s in rescued], dur)
    assert f_resc >= 0.8 and f_resc > f_plain + 0.3, (f_plain, f_resc)
    cough_start = 2.0 + len(w) / SR
    assert not any(s.end > cough_start + 0.1 for s in rescued), rescued   # the coughs stay non-speech


@pytest.mark.slow
def test_song_boundary_between_same_instrument_pieces(tmp_path):
    """Piano, then piano again in another key, register and tempo (the hard case on the benchmark)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    s1 = _render(0, [60, 64, 67, 72, 67, 64], 0.2, 40.0, tmp_path / "a")
    s2 = _render(0, [57, 60, 64, 69, 64, 60, 62, 65], 0.55, 40.0, tmp_path / "b")
    wave, spans = audio.crossfade_concat([s1, s2], SR, fade=3.0)
    songs = create_backend("song_boundaries", {"name": "kernel_cpd", "min_song_sec": 15.0}).segment(wave, SR)
    assert [t.speaker for t in songs] == ["SONG_01", "SONG_02"]
    ref = (spans[0].end + spans[1].start) / 2
    assert boundary_f1([ref], [songs[1].start], 3.0)["f1"] == 1.0, (ref, songs)


@pytest.mark.slow
def test_pocketsphinx_decoder_options_pass_through_and_bad_ones_fail_clearly(speech_bench):
    wave = audio.load(speech_bench / "emotion" / "recordings" / "rec1.wav", sr=SR)[: SR * 4]
    fast = create_backend("asr", {"name": "pocketsphinx", "maxhmmpf": 2000, "ds": 2})
    assert fast.decoder.config["ds"] == 2
    assert "morning" in fast.transcribe(wave, SR)["text"]
    with pytest.raises(BackendError, match="pocketsphinx"):
        create_backend("asr", {"name": "pocketsphinx", "no_such_option": 1})
