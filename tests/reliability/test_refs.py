"""Reference clips of ``harp ask --ref ROLE=CLIP`` (issue #28, classes 6 and 8).

Before: a 2-hour clip was copied into ``refs/`` (221 MB, no cap, no answer within 150 s); a
NaN-filled or 0.05 s clip got a timestamped emotion answer; ``--ref A`` given twice kept the last.
Now a clip is 0.3-60 s of finite, non-silent sound, checked before anything is copied.
"""
from __future__ import annotations

import argparse
import struct
import time

import numpy as np
import pytest
import soundfile as sf

from harp_lib.core import audio
from harp_lib.ownaudio import ask
from harp_lib.ownaudio.collection import UserDataError, collection
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.schema import Recording

from rel_helpers import SR, cheap_cfg, speechlike


def _sparse_wav(path, seconds: float) -> None:
    """A valid 16 kHz 16-bit mono WAV of ``seconds`` whose samples are a sparse hole (no disk used)."""
    n = int(seconds * SR) * 2
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + n) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, SR, SR * 2, 2, 16)
                + b"data" + struct.pack("<I", n))
        f.truncate(44 + n)


@pytest.fixture()
def col_cfg(tmp_path):
    cfg = cheap_cfg(tmp_path / "root")
    col = collection(cfg)
    wav = col.bench_dir("clinical") / "audio" / "r.wav"
    wav.parent.mkdir(parents=True)
    audio.write(wav, speechlike(5.0), SR)
    write_jsonl(col.manifest("clinical"), [Recording("r", "clinical", "audio/r.wav", 5.0, SR)])
    return cfg, col


def _clip(tmp_path, kind: str):
    p = tmp_path / f"{kind}.wav"
    if kind == "long":
        _sparse_wav(p, 600.0)
    elif kind == "short":
        audio.write(p, speechlike(0.05), SR)
    elif kind == "nan":
        w = speechlike(2.0)
        w[SR // 2:] = np.nan
        sf.write(p, w, SR, subtype="FLOAT")
    elif kind == "silent":
        audio.write(p, np.zeros(2 * SR, np.float32), SR)
    return p


@pytest.mark.parametrize("kind,why", [("long", r"600.0 s long; reference clips are at most 60 s"),
                                      ("short", r"0.05 s long; reference clips need at least 0.3 s"),
                                      ("nan", r"NaN or infinite samples"),
                                      ("silent", r"silent \(all samples 0\)")])
def test_unusable_reference_clips_are_refused_before_any_copy(col_cfg, tmp_path, kind, why):
    cfg, col = col_cfg
    clip = _clip(tmp_path, kind)
    t0 = time.perf_counter()
    with pytest.raises(UserDataError, match=rf"--ref E=.*{kind}.wav: .*{why}"):
        ask.ask("r", "When does someone sound like this?", refs={"E": str(clip)}, cfg=cfg)
    assert time.perf_counter() - t0 < 10
    assert not (col.bench_dir("clinical") / "refs").exists()          # nothing copied
    assert not col.answers_dir.exists()                               # nothing cached


def test_a_role_given_twice_is_a_usage_error(col_cfg, tmp_path, capsys):
    cfg, _ = col_cfg
    a, b = tmp_path / "a.wav", tmp_path / "b.wav"
    for p in (a, b):
        audio.write(p, speechlike(2.0), SR)
    ns = argparse.Namespace(recording="r", question="Which speaker sounds more energetic?",
                            ref=[f"A={a}", f"a={b}"], setup="A5", agent="rule", collection=None, no_cache=True,
                            json=False)
    assert ask.ask_run(cfg, ns) == 2
    err = capsys.readouterr().err
    assert f"--ref A is given twice ({a}, {b})" in err and len(err.strip().splitlines()) == 1
