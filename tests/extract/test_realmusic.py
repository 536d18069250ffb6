"""Song segmentation on real recorded music (Debian game music, fetched by bootstrap), joined
with the benchmark's 3 s crossfades: the check the rendered-MIDI medleys cannot give."""
from __future__ import annotations

import pytest

from harp_lib.config import create_backend, load_config
from harp_lib.corpora.synth.realmusic import TRACKS, real_medley, segmentation_f1


def _segmenter():
    opts = dict(load_config().extract["options"]["kernel_cpd"])
    return create_backend("song_boundaries", {"name": "kernel_cpd", **opts})


def test_min_song_length_default_finds_the_short_real_tracks():
    opts = load_config().extract["options"]["kernel_cpd"]
    assert opts["min_song_sec"] < 61.0      # the 64 s track spans 61 s between crossfade middles
    assert load_config().extract["min_song_sec"] == opts["min_song_sec"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_boundary_f1_on_the_other_real_track_orders(seed):
    """Issue 19: F1 >= 0.9 in every track order.  Seed 1 put asc_machine_wars (which fades out
    ~4 s before its end) before a crossfade: the contrast peaked before the fade (6 s early);
    ``dip_db`` moves such a boundary to the end of the quiet part."""
    m = segmentation_f1(_segmenter(), seed=seed, fade=3.0, tol=3.0)
    assert m["f1"] >= 0.9, m


def test_a_boundary_moves_to_the_end_of_a_level_dip_only_when_asked():
    """Two tone 'songs' (different pitch and pulse); the first goes quiet 5 s before the
    switch: with ``dip_db`` the boundary lands where the second starts, without it may not."""
    import numpy as np
    sr = 16000
    t = np.arange(60 * sr) / sr
    a = np.sin(2 * np.pi * 220 * t) * (1 + (np.sin(2 * np.pi * 2.0 * t) > 0))
    b = np.sin(2 * np.pi * 330 * t) * (1 + (np.sin(2 * np.pi * 3.1 * t) > 0))
    a[-5 * sr:] *= 0.01                                   # fades 5 s before its end
    w = np.concatenate([a, b]).astype(np.float32) * 0.05
    w += np.random.default_rng(0).standard_normal(len(w)).astype(np.float32) * 1e-4
    opts = dict(load_config().extract["options"]["kernel_cpd"], min_song_sec=20.0, cand_min_sec=10.0)
    found = {d: create_backend("song_boundaries", {"name": "kernel_cpd", **opts, "dip_db": d}).boundaries(w, sr)
             for d in (None, 15.0)}
    assert len(found[15.0]) == 1 and abs(found[15.0][0] - 60.0) <= 1.0, found
    assert all(abs(x - 60.0) > 1.0 for x in found[None]), found      # the contrast alone lands late


@pytest.mark.slow
def test_boundary_f1_on_real_music_medley_with_crossfades():
    m = segmentation_f1(_segmenter(), seed=0, fade=3.0, tol=3.0)
    assert len(m["layout"]) == len(TRACKS) >= 5 and m["minutes"] > 20
    assert m["f1"] >= 0.9, m
    # the 73 s track (below the paper's 90 s minimum) is delimited on both sides
    (name, s, e), = [x for x in m["layout"] if x[0] == "neverball_track6.ogg"]
    assert e - s < 90
    for b in (s + 1.5, e - 1.5):
        assert any(abs(h - b) <= 3.0 for h in m["found"]), (b, m["found"])


@pytest.mark.slow
def test_real_medley_boundaries_are_crossfade_middles():
    wave, bounds, layout = real_medley(seed=1)
    assert len(bounds) == len(layout) - 1
    for (a, _, ae), (_, bs, _), b in zip(layout, layout[1:], bounds):
        assert ae - bs == pytest.approx(3.0, abs=1e-3) and b == pytest.approx((ae + bs) / 2, abs=1e-3)


@pytest.mark.slow
def test_aesthetics_tiers_spread_on_real_music():
    """Nine professionally produced tracks: not one tier for all (v1 ranges rated 7 of 9 High)."""
    import numpy as np
    from harp_lib.core import audio
    from harp_lib.extract.aesthetics_labeler import AestheticsLabeler
    from harp_lib.corpora.synth.realmusic import music_dir
    lab = AestheticsLabeler()
    overall, tiers = [], set()
    for t in sorted(TRACKS):
        w = audio.load(music_dir() / t, sr=16000)
        chunks = [w[i:i + 15 * 16000] for i in range(0, len(w) - 15 * 16000, 15 * 16000)][:8]
        out = lab.label_recording(chunks, 16000, [""] * len(chunks), ["SONG"] * len(chunks))
        overall.append(out[0]["overall"])
        tiers.add(out[0]["primary"])
        assert all(1.0 <= v <= 5.0 for v in out[0]["scores"].values())
    assert len(tiers) >= 2, (tiers, overall)
    assert max(overall) - min(overall) >= 0.4, overall
    assert np.mean([o >= 3.5 for o in overall]) < 0.5, overall


def test_aesthetics_v3_hears_clipping_muffling_and_not_hiss_as_wrong_notes():
    """On 20 s of a real recording (normalised like the benchmark songs, -20 dBFS): clipping
    lowers Naturalness (crest factor), a 900 Hz low-pass lowers Clarity (roll-off), and stationary
    hiss leaves the key clarity (noise floor subtracted from the chroma) nearly where it was."""
    import numpy as np
    from scipy.signal import butter, sosfilt
    from harp_lib.core import audio
    from harp_lib.extract.aesthetics_labeler import AestheticsLabeler
    from harp_lib.extract.aesthetics_measures import aesthetic_features
    from harp_lib.corpora.synth.realmusic import music_dir
    from harp_lib.corpora.synth.voices import normalize_rms
    w = normalize_rms(audio.load(music_dir() / "neverball_track2.ogg", sr=16000, start=20.0, end=40.0), -20.0)
    clipped = normalize_rms(np.clip(w * 10 ** (12 / 20), -0.5, 0.5), -20.0)
    muffled = normalize_rms(sosfilt(butter(4, 900.0, "lowpass", fs=16000, output="sos"), w).astype(np.float32), -20.0)
    hiss = np.random.default_rng(0).standard_normal(len(w)).astype(np.float32)
    noisy = normalize_rms(w + hiss * float(np.sqrt(np.mean(w ** 2))) * 10 ** (-6 / 20), -20.0)
    lab = AestheticsLabeler()
    f = {k: aesthetic_features(x) for k, x in (("clean", w), ("clipped", clipped), ("muffled", muffled),
                                                  ("noisy", noisy))}
    s = {k: lab.scores(v) for k, v in f.items()}
    assert f["clipped"]["crest_db"] < f["clean"]["crest_db"] - 3, f
    assert s["clipped"]["Naturalness"] < s["clean"]["Naturalness"] - 1.0, s
    assert f["muffled"]["rolloff_hz"] < 1500 < f["clean"]["rolloff_hz"], f
    assert s["muffled"]["Clarity"] < s["clean"]["Clarity"] - 0.5, s
    assert abs(f["noisy"]["key_clarity"] - f["clean"]["key_clarity"]) < 0.1, f
    assert s["noisy"]["Clarity"] < s["clean"]["Clarity"] - 1.0, s


def test_song_level_aesthetics_measure_the_joined_song():
    """Chunks tagged with one song are labelled as one clip (not a mean of chunk scores)."""
    from harp_lib.core import audio
    from harp_lib.extract.aesthetics_labeler import AestheticsLabeler
    from harp_lib.corpora.synth.realmusic import music_dir
    a = audio.load(music_dir() / "neverball_track2.ogg", sr=16000, start=10.0, end=40.0)
    b = audio.load(music_dir() / "neverball_track5.ogg", sr=16000, start=10.0, end=25.0)
    lab = AestheticsLabeler()
    out = lab.label_recording([a[:240000], b, a[240000:]], 16000, [""] * 3, ["SONG_01", "SONG_02", "SONG_01"])
    assert out[0] == out[2] == lab.label(a)
    assert out[1] == lab.label(b) and out[1] != out[0]
