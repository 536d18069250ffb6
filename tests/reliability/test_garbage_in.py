"""Issue #28, class 9: garbage in is never answered with a default class.

Before: a silent recording, a NaN-filled one and a pure tone all answered "Neutral" to an
emotion question ("No emotion labels in the retrieved evidence; defaulting to Neutral"); the
rules of the other query types defaulted too ("none" for a change, "A" for a comparison,
"tie" for two songs, "No" for a cough in silence).
"""
from __future__ import annotations

import numpy as np
import pytest

from harp_lib.core import audio
from harp_lib.ownaudio import ask
from harp_lib.ownaudio.collection import UserDataError, collection
from harp_lib.ownaudio.ingest import ingest
from harp_lib import tasks
from harp_lib.tasks.base import NO_EVIDENCE

from rel_helpers import SR, cheap_cfg


def _wave(kind: str) -> np.ndarray:
    n = 8 * SR
    if kind == "silent":
        return np.zeros(n, np.float32)
    if kind == "tone":
        return (0.3 * np.sin(2 * np.pi * 440 * np.arange(n) / SR)).astype(np.float32)
    w = np.full(n, np.nan, np.float32)                         # "nan": every sample
    return w


@pytest.fixture(scope="module")
def garbage(tmp_path_factory):
    d = tmp_path_factory.mktemp("garbage")
    cfg = cheap_cfg(d / "root")
    out = {}
    for kind in ("silent", "tone", "nan"):
        src = d / f"{kind}.wav"
        audio.write(src, _wave(kind), SR) if kind != "nan" else _write_float_wav(src, _wave(kind))
        try:
            (out[kind],) = ingest([src], "speech", cfg=cfg, progress=False)
        except UserDataError as e:
            out[kind] = str(e)
    return cfg, out


def _write_float_wav(path, wave) -> None:
    import soundfile as sf
    sf.write(str(path), wave, SR, subtype="FLOAT")          # audio.write would clip the NaN away


QUESTIONS = ["How does the host feel around 4 seconds?", "Does valence rise over the first 6 seconds?",
             "Who sounds more aroused, the first speaker or the second?"]


@pytest.mark.parametrize("kind", ["silent", "tone", "nan"])
def test_a_recording_without_speech_answers_no_evidence(garbage, kind):
    cfg, recs = garbage
    rec = recs[kind]
    if kind == "nan":                              # refused at ingest, naming the file (was: ingested as silence)
        assert isinstance(rec, str) and "nan.wav" in rec and "NaN or infinite samples" in rec, rec
        assert "nan" not in {r.id for r in collection(cfg).recordings("emotion")}
        return
    assert rec.error is None, rec
    for q in QUESTIONS:
        ans = ask.ask(rec.id, q, cfg=cfg, use_cache=False)
        assert ans.answer in (NO_EVIDENCE, "no speech found", "unsupported question"), (q, ans)
        assert "Neutral" not in ans.answer and "defaulting" not in ans.rationale, (q, ans)


class _Ctx:
    """The little a rule answer reads: the question, the setup, the parameters."""

    def __init__(self, qtype: str, text: str):
        from types import SimpleNamespace
        self.query = SimpleNamespace(text=text, query_type=qtype, references={}, custom={})
        self.setup = SimpleNamespace(show_metadata=True)
        self.references = {}
        self.recording = SimpleNamespace(duration=60.0)
        self.params = SimpleNamespace(trend_threshold=0.05, tie_delta=0.05)   # a read of any other is an error


@pytest.mark.parametrize("qtype,text", [
    ("state", "Which emotion does the speaker express?"),
    ("change", "How does the valence change?"),
    ("comparison", "Who shows higher arousal, A or B?"),
    ("reported", "Does the patient mention breathing problems?"),
    ("exhibited", "Does the patient cough?"),
    ("position", "Which is better, the first or the second song?"),
    ("time", "Which song is better?"),
])
def test_no_rule_answers_a_default_class_without_evidence(qtype, text):
    """Every task's rule, given nothing retrieved, says "no evidence", never one of its classes."""
    task = tasks.get(qtype)
    try:
        ans, why = task.rule_answer(_Ctx(qtype, text), [])
    except NotImplementedError:
        pytest.skip(f"{qtype} has no rule answer")
    assert ans == NO_EVIDENCE and "no speech found" in why, (qtype, ans, why)


def test_a_half_truncated_wav_is_refused_at_ingest(tmp_path):
    """Before: a WAV whose header promises 8 s but whose file holds 4 s ingested as a 4-s
    recording without a word.  Decided: an error naming the file (like an unreadable file), before
    anything is written; the collection is unchanged."""
    src = tmp_path / "cut.wav"
    audio.write(src, _wave("tone"), SR)
    data = src.read_bytes()
    src.write_bytes(data[: 44 + (len(data) - 44) // 2])           # the header still says 8 s
    cfg = cheap_cfg(tmp_path / "root")
    with pytest.raises(UserDataError, match=r"cut\.wav: not a readable audio file \(header says 8\.00 s "
                                                     r"but only 4\.00 s of samples are present \(truncated file\?\)"):
        ingest([src], "speech", cfg=cfg, progress=False)
    assert collection(cfg).recordings("emotion") == []
