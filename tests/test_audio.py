import subprocess
import sys
import textwrap

import numpy as np
import pytest
import soundfile as sf

from harp_lib.core import audio
from harp_lib.core.audio import AudioError
from harp_lib.core.timespan import Span


def _tone(sec, sr=16000, f=440.0, ch=1):
    t = np.arange(int(sec * sr)) / sr
    x = (0.3 * np.sin(2 * np.pi * f * t)).astype(np.float32)
    return np.stack([x] * ch, axis=1) if ch > 1 else x


def test_write_probe_load(tmp_path):
    p = tmp_path / "a.wav"
    audio.write(p, _tone(2.0), 16000)
    info = audio.probe(p)
    assert (info.sample_rate, info.channels, info.frames, info.duration) == (16000, 1, 32000, 2.0)
    x = audio.load(p)
    assert x.dtype == np.float32 and x.shape == (32000,)
    assert np.allclose(x, _tone(2.0), atol=1e-4)


def test_stereo_downmix_and_resample(tmp_path):
    p = tmp_path / "st.wav"
    st = np.stack([np.full(44100, 0.5, np.float32), np.full(44100, -0.1, np.float32)], axis=1)
    sf.write(p, st, 44100)
    x = audio.load(p, sr=16000)
    assert x.shape == (16000,)
    assert np.allclose(x[100:-100], 0.2, atol=1e-3)
    assert audio.load(p, sr=None, mono=False).shape == (44100, 2)


def test_resample_preserves_frequency():
    x = _tone(1.0, sr=22050, f=1000)
    y = audio.resample(x, 22050, 16000)
    assert len(y) == 16000
    spec = np.abs(np.fft.rfft(y))
    assert abs(np.argmax(spec) - 1000) <= 1


def test_window_read_matches_full(tmp_path):
    p = tmp_path / "a.flac"
    x = np.random.default_rng(0).uniform(-0.5, 0.5, 16000 * 10).astype(np.float32)
    audio.write(p, x, 16000)
    full = audio.load(p)
    w = audio.read_window(p, Span(2.5, 4.0))
    assert np.array_equal(w, full[40000:64000])
    spans = [s for s, _ in audio.iter_windows(p, window=3.0)]
    assert spans == [Span(0, 3), Span(3, 6), Span(6, 9), Span(9, 10)]


def test_crop_modes():
    x = np.arange(16000, dtype=np.float32)
    assert np.array_equal(audio.crop(x, Span(0.5, 0.75), 16000), x[8000:12000])
    with pytest.raises(AudioError, match="outside the signal"):
        audio.crop(x, Span(0.5, 1.5), 16000, mode="raise")
    y = audio.crop(x, Span(0.5, 1.5), 16000, mode="pad")
    assert len(y) == 16000 and np.array_equal(y[:8000], x[8000:]) and not y[8000:].any()
    with pytest.raises(ValueError):
        audio.crop(x, Span(0, 1), 16000, mode="loop")


def test_crossfade_concat():
    sr = 1000
    a, b, c = np.ones(5000, np.float32), np.ones(4000, np.float32), np.ones(6000, np.float32)
    y, spans = audio.crossfade_concat([a, b, c], sr, fade=1.0)
    assert len(y) == 5000 + 4000 + 6000 - 2000
    assert spans == [Span(0, 5), Span(4, 8), Span(7, 13)]
    assert np.allclose(y, 1.0, atol=1e-3)  # linear fades of equal signals sum to one


def test_bad_files_named(tmp_path):
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    with pytest.raises(AudioError, match="empty.wav.*empty"):
        audio.probe(empty)
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"RIFF....WAVEjunkjunkjunk" * 10)
    with pytest.raises(AudioError, match="junk.wav"):
        audio.probe(junk)
    with pytest.raises(AudioError, match="no such audio file"):
        audio.probe(tmp_path / "missing.wav")
    with pytest.raises(AudioError, match="non-finite"):
        audio.write(tmp_path / "nan.wav", np.array([0.0, np.nan], np.float32), 16000)
    assert not (tmp_path / "nan.wav").exists()


@pytest.mark.slow
def test_mp3_through_ffmpeg(tmp_path):
    wav, mp3 = tmp_path / "a.wav", tmp_path / "a.mp3"
    audio.write(wav, _tone(3.0), 16000)
    subprocess.run(["ffmpeg", "-v", "error", "-i", str(wav), str(mp3)], check=True)
    x = audio.load(mp3, start=1.0, end=2.0)
    assert abs(len(x) - 16000) < 400


@pytest.mark.slow
def test_two_hour_window_read_has_bounded_memory(tmp_path):
    """Reading a window of a 2-hour file must not load the file (~230 MB as float32)."""
    p = tmp_path / "long.wav"
    sr = 16000
    with sf.SoundFile(p, "w", sr, 1, "PCM_16") as fh:
        block = (0.1 * np.sin(np.arange(sr * 60) / 10)).astype(np.float32)
        for _ in range(120):
            fh.write(block)
    code = textwrap.dedent(f"""
        import resource, numpy as np
        from harp_lib.core import audio
        from harp_lib.core.timespan import Span
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        info = audio.probe({str(p)!r})
        assert info.duration == 7200.0, info.duration
        x = audio.read_window({str(p)!r}, Span(5400, 5430))
        assert x.shape == (30 * 16000,)
        n = sum(len(w) for _, w in audio.iter_windows({str(p)!r}, window=600.0))
        assert n == 7200 * 16000
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) // 1024)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    grew_mb = int(out.stdout.strip())
    assert grew_mb < 150, f"peak RSS grew by {grew_mb} MB reading windows of a 2-hour file"
