"""Tiny real-audio fixtures for the extraction tests (built once per session)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from harp_lib.core import audio  # noqa: E402
from harp_lib.core.jsonl import write_jsonl  # noqa: E402
from harp_lib.core.schema import Recording, Segment
from harp_testing import flite, small_cfg, spoken_turns  # noqa: E402,F401  (tests/ is on sys.path)

ROOT = Path(__file__).resolve().parents[2]
SCRATCH = ROOT / ".cache" / "harp" / "scratch"
SAMPLE = ROOT / ".cache" / "harp" / "pyannote_sample"

LINES = [
    ("slt", "Good morning and welcome back to the show, today we talk about gardening."),
    ("rms", "Thank you for having me, I have been growing tomatoes for many years now."),
    ("slt", "That is wonderful, what is the most important thing for a beginner to know?"),
    ("rms", "Water them every morning and give the plants plenty of sunshine."),
]


@pytest.fixture(scope="session")
def speech_bench(tmp_path_factory) -> Path:
    """benchmark-like folder: emotion/ (two flite voices) and clinical/ (speech + real coughs)."""
    root = tmp_path_factory.mktemp("bench")
    tmp = tmp_path_factory.mktemp("tts")
    wave, segs = spoken_turns(LINES, tmp, "rec1", pause_sec=0.6, labels={"primary": "Neutral"}, speaker_prefix="spk_")
    d = root / "emotion"
    audio.write(d / "recordings" / "rec1.wav", wave, 16000)
    write_jsonl(d / "recordings.jsonl", [Recording("rec1", "emotion", "recordings/rec1.wav", len(wave) / 16000)])
    write_jsonl(d / "segments.jsonl", segs)
    # clinical: a sentence, two real coughs in pauses, another sentence
    cough = audio.load(SCRATCH / "Cough-female.wav", sr=16000) * 0.6
    a = flite("I have had a sore throat since Monday.", tmp / "c1.wav", "slt")
    b = flite("Let me listen to your chest please.", tmp / "c2.wav", "rms")
    gap = np.zeros(int(0.8 * 16000), np.float32)
    parts = [a, gap, cough, gap, cough, gap, b]
    wave = np.concatenate(parts)
    # a faint room-noise floor as in every real (and benchmark, -62 dB) recording: the cough
    # detector reads the noisiness of a burst's explosive phase, which digital silence distorts
    wave += (np.random.default_rng(0).standard_normal(len(wave)) * 10 ** (-62 / 20)).astype(np.float32)
    d = root / "clinical"
    audio.write(d / "recordings" / "c1.wav", wave, 16000)
    write_jsonl(d / "recordings.jsonl", [Recording("c1", "clinical", "recordings/c1.wav", len(wave) / 16000)])
    ta = len(a) / 16000
    tb = (len(wave) - len(b)) / 16000
    write_jsonl(d / "segments.jsonl", [
        Segment("c1_0000", "c1", 0.0, ta, "patient", "I have had a sore throat since Monday.",
                labels={"primary": "no cough", "cough_count": 0}),
        Segment("c1_0001", "c1", ta, tb, None, "", labels={"primary": "2 cough", "cough_count": 2}),  # not speech
        Segment("c1_0002", "c1", tb, len(wave) / 16000, "doctor", "Let me listen to your chest please.",
                labels={"primary": "no cough", "cough_count": 0}),
    ])
    return root


def _render(program: int, pitches, tempo: float, dur: float, tmp: Path) -> np.ndarray:
    import pretty_midi
    pm = pretty_midi.PrettyMIDI()
    inst = pretty_midi.Instrument(program=program)
    t, i = 0.0, 0
    while t < dur:
        p = pitches[i % len(pitches)]
        inst.notes.append(pretty_midi.Note(velocity=90, pitch=p, start=t, end=t + tempo * 0.9))
        inst.notes.append(pretty_midi.Note(velocity=70, pitch=p - 12, start=t, end=t + tempo * 0.9))
        t += tempo
        i += 1
    pm.instruments.append(inst)
    sf2 = next((p for p in ("/usr/share/sounds/sf2/TimGM6mb.sf2", "/usr/share/sounds/sf2/FluidR3_GM.sf2")
                if Path(p).exists()), None)
    assert sf2, "no General MIDI soundfont installed (apt-get install timgm6mb-soundfont)"
    mid, wav = tmp / f"p{program}.mid", tmp / f"p{program}.wav"
    pm.write(str(mid))
    subprocess.run(["fluidsynth", "-ni", "-q", "-r", "16000", "-F", str(wav), sf2, str(mid)],
                   check=True, timeout=120, capture_output=True)
    w = audio.load(wav, sr=16000)
    return (w / (np.abs(w).max() + 1e-9) * 0.5)[: int(dur * 16000)]


@pytest.fixture(scope="session")
def song_bench(tmp_path_factory) -> Path:
    """Two rendered 'songs' (piano in C major, then strings in a slower F# minor), crossfaded."""
    root = tmp_path_factory.mktemp("songs")
    tmp = tmp_path_factory.mktemp("midi")
    s1 = _render(0, [60, 64, 67, 72, 67, 64], 0.25, 40.0, tmp)
    s2 = _render(48, [66, 69, 73, 78, 73, 69], 0.5, 40.0, tmp)
    wave, spans = audio.crossfade_concat([s1, s2], 16000, fade=3.0)
    d = root / "song"
    audio.write(d / "recordings" / "m1.wav", wave, 16000)
    write_jsonl(d / "recordings.jsonl", [Recording("m1", "song", "recordings/m1.wav", len(wave) / 16000)])
    write_jsonl(d / "segments.jsonl", [Segment(f"m1_{i:04d}", "m1", sp.start, sp.end, f"SONG_{i + 1:02d}",
                                               labels={"primary": "High"}) for i, sp in enumerate(spans)])
    return root


@pytest.fixture(scope="session")
def sample_call() -> tuple[Path, Path]:
    wav, rttm = SAMPLE / "sample.wav", SAMPLE / "sample.rttm"
    assert wav.exists(), "pyannote sample missing: run scripts/bootstrap.sh"
    return wav, rttm


