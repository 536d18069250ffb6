"""HARP stage 1 (generic, cached per recording) for one recording.

Caches under ``data/extract/<domain>/stage1/<rec>/``: ``speech.json`` (VAD) -> ``turns.json``
(diarization or song boundaries, then chunk/merge rules) -> ``asr.json`` (VAD-gated ASR per
turn) -> ``text.npy`` / ``audio.npy`` -> ``done.json`` (backends and per-stage seconds).  Every
file is written atomically and every step is skipped when its file exists, so a killed run
resumes where it stopped.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from harp_lib.core.schema import Recording
from harp_lib.core.timespan import Span
from harp_lib.extract.settings import model_for as _model
from harp_lib.extract.stage_cache import _name, _read_json, _write_json, _write_npy, stage1_key
from harp_lib.extract.streaming import clips, speech_regions
from harp_lib.extract.turn_steps import fill_gaps, transcribe_turns
from harp_lib.extract.turns import Turn, segment_turns

__all__ = ["stage1"]


def stage1(rec: Recording, wave: np.ndarray, cache: Path, st: dict, force: bool = False,
           audio_sha256: Optional[str] = None) -> dict:
    """Run (or resume) stage 1 for one recording; returns the ``done.json`` dict.

    The cache is valid while ``done.json`` ``key`` (:func:`stage1_key`: the audio's content
    hash and every stage-1 backend with its options) is unchanged: other audio under the same
    id and duration, or other options, recompute it.
    """
    sr = st["sr"]
    done_p = cache / "done.json"
    key = stage1_key(st, audio_sha256)
    if done_p.exists() and not force:
        done = _read_json(done_p)
        if done.get("key") == key:
            return done
        force = True  # other audio, backends, options or rules: the whole cache is stale
    # ``force`` recomputes every step and replaces each file atomically; nothing is deleted up
    # front, so a run stopped by a storage fault leaves the previous cache whole.  Only an
    # embedding this configuration no longer makes is removed (a file this stage wrote).
    if force:
        for space, stage in (("text", "text_emb"), ("audio", "audio_emb")):
            if st[stage] is None:
                (cache / f"{space}.npy").unlink(missing_ok=True)
    timing = _read_json(cache / "timing.json") if (cache / "timing.json").exists() and not force else {}
    timed = _stage1_timer(cache, timing)
    # 1. speech activity
    sp_p = cache / "speech.json"
    if force or not sp_p.exists():
        spans = timed("vad", lambda: speech_regions(_model("vad", st["vad"]), wave, sr,
                                                    st["stream_chunk_sec"]))
        _write_json(sp_p, [[s.start, s.end] for s in spans])
    speech = [Span(s, e) for s, e in _read_json(sp_p)]
    # 2. turns (speakers or songs), then the paper's chunk/merge rules
    tu_p = cache / "turns.json"
    if force or not tu_p.exists():
        _write_json(tu_p, _turns_doc(st, wave, speech, timed))
    turns = [Turn(**t) for t in _read_json(tu_p)["turns"]]
    # 3. ASR, only where there is speech
    asr = _stage1_asr(st, wave, cache, turns, speech, force, timed, timing)
    # 4. generic embeddings
    _stage1_embeddings(st, wave, cache, turns, asr, force, timed)
    done = {"backends": _stage1_backends(st), "key": key, "timing": timing, "duration": rec.duration,
            "n_turns": len(turns)}
    _write_json(done_p, done)
    return done


def _stage1_timer(cache: Path, timing: dict):
    """``timed(key, fn)``: run ``fn``, add its CPU time to ``timing[key]`` and rewrite ``timing.json``."""
    def timed(key, fn):
        t = time.process_time()
        out = fn()
        timing[key] = round(timing.get(key, 0.0) + time.process_time() - t, 3)
        _write_json(cache / "timing.json", timing)
        return out
    return timed


def _stage1_asr(st: dict, wave: np.ndarray, cache: Path, turns: Sequence[Turn], speech: Sequence[Span],
                force: bool, timed, timing: dict) -> list:
    """Step 3: transcribe the turns into ``asr.json`` (unless cached) and return its records."""
    asr_p = cache / "asr.json"
    if force or not asr_p.exists():
        cpu: dict = {}
        _write_json(asr_p, timed("asr", lambda: transcribe_turns(st, wave, turns, speech,
                                                                 workers=int(st.get("inner_workers", 1)), cpu=cpu)))
        if cpu:                                  # CPU of the ASR worker processes (not in process_time)
            timing["asr"] = round(timing["asr"] + cpu["asr_workers"], 3)
            _write_json(cache / "timing.json", timing)
    return _read_json(asr_p)


def _stage1_embeddings(st: dict, wave: np.ndarray, cache: Path, turns: Sequence[Turn], asr: list,
                       force: bool, timed) -> None:
    """Step 4: write the generic text and audio embeddings (``text.npy``, ``audio.npy``) not cached."""
    sr = st["sr"]
    waves = clips(wave, turns, sr)
    for space, stage, inputs in (("text", "text_emb", [a["text"] for a in asr]), ("audio", "audio_emb", waves)):
        p = cache / f"{space}.npy"
        spec = st[stage]
        if spec is None or (p.exists() and not force):
            continue
        def emb(stage=stage, spec=spec, inputs=inputs):
            m = _model(stage, spec)
            if not inputs:
                return np.zeros((0, m.dim), np.float32)
            return m.embed(inputs) if stage == "text_emb" else m.embed(inputs, sr=sr)
        _write_npy(p, timed(stage, emb))


def _turns_doc(st: dict, wave: np.ndarray, speech: Sequence[Span], timed) -> dict:
    """``turns.json``: the segmenter's ``raw`` turns, the ``turns`` after the paper's chunk/merge
    rules and, with an overlap backend, the second speakers where two talk (``overlap``)."""
    sr, seg_stage = st["sr"], st["segmenter"]
    raw = timed(seg_stage, lambda: _model(seg_stage, st["segment"]).segment(wave, sr, speech=speech))
    doc: dict = {}
    if st.get("overlap") is not None and seg_stage == "diarization":
        # frame-level speakers and the second speaker where two talk (extract/overlap.py)
        raw, second = timed("overlap", lambda: _model("overlap", st["overlap"]).resolve(wave, sr, raw))
        doc["overlap"] = [t.to_dict() for t in second]
    final = segment_turns(fill_gaps(raw, st["fill_gaps_sec"]), st["max_seg_sec"], st["min_turn_sec"])
    return {"raw": [t.to_dict() for t in raw], "turns": [t.to_dict() for t in final], **doc}


def _stage1_backends(st: dict) -> dict:
    return {k: _name(st[k]) for k in ("vad", "segment", "asr", "text_emb", "audio_emb")} | \
        {"max_seg_sec": st["max_seg_sec"], "min_turn_sec": st["min_turn_sec"], "fill_gaps_sec": st["fill_gaps_sec"]}
