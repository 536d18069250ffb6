"""HARP stage 2 (domain experts) for one recording.

Reads the stage-1 cache, runs the labelers (merged left to right: a later labeler overwrites a
key only with a non-None value) and the domain embedder, and writes ``vectors/<rec>.<space>.npy``
then ``segments/<rec>.jsonl`` (the commit marker).  ``--stage 2 --force`` re-runs it alone.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import numpy as np

from harp_lib.core.paths import ExtractPaths
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.schema import Recording, Segment
from harp_lib.core.timespan import Span
from harp_lib.extract.overlap import overlap_in
from harp_lib.extract.settings import model_for as _model
from harp_lib.extract.stage_cache import _name, _read_json, _write_json, _write_npy, stage2_key
from harp_lib.extract.streaming import clips
from harp_lib.extract.turn_steps import _spans_within, label_turns
from harp_lib.extract.turns import Turn

__all__ = ["stage2"]


def stage2(rec: Recording, wave: np.ndarray, cache: Path, out_dir: Path, st: dict,
           force: bool = False, audio_sha256: Optional[str] = None) -> dict:
    """Labels + domain embedding; writes vectors then the segment file.  Returns timings.

    Skipped when the segment file is newer than stage 1's ``done.json`` and ``stage2.json``
    holds the same :func:`stage2_key` (audio content, labelers and embedder with options).
    """
    seg_p = ExtractPaths(out_dir).segments(rec.id)
    done_p = cache / "done.json"
    s2_p = cache / "stage2.json"
    key = stage2_key(st, audio_sha256)
    if seg_p.exists() and not force and done_p.exists() and seg_p.stat().st_mtime >= done_p.stat().st_mtime \
            and s2_p.exists() and _read_json(s2_p).get("key") == key:
        return {}
    if not (cache / "done.json").exists():
        raise FileNotFoundError(f"{rec.id}: stage-1 cache {cache} is missing or incomplete; "
                                f"run `harp extract --stage 1` first")
    sr = st["sr"]
    tu = _read_json(cache / "turns.json")
    turns = [Turn(**t) for t in tu["turns"]]
    second = [Turn(**t) for t in tu.get("overlap", [])]
    raw = [Turn(**t) for t in tu["raw"]] if second else []
    asr = _read_json(cache / "asr.json")
    speech = [Span(s, e) for s, e in _read_json(cache / "speech.json")]
    waves = clips(wave, turns, sr)
    texts = [a["text"] for a in asr]
    timing: dict[str, float] = {}
    t0 = time.process_time()
    labels = label_turns(st, wave, turns, texts, waves, workers=int(st.get("inner_workers", 1)))
    timing["labels"] = round(time.process_time() - t0, 3)     # this process only (workers not counted)
    vectors: dict[str, np.ndarray] = {}
    for space in ("text", "audio"):
        if (cache / f"{space}.npy").exists():
            vectors[space] = np.load(cache / f"{space}.npy", allow_pickle=False)
    if st["domain_emb"] is not None:
        t0 = time.process_time()
        m = _model("domain_emb", st["domain_emb"])
        vectors["domain"] = m.embed(waves, sr=sr) if waves else np.zeros((0, m.dim), np.float32)
        timing["domain_emb"] = round(time.process_time() - t0, 3)
    for space, arr in sorted(vectors.items()):
        if len(arr) != len(turns):
            raise ValueError(f"{rec.id}: {space} vectors have {len(arr)} rows for {len(turns)} turns "
                             f"(stale cache? rerun with --force)")
        _write_npy(ExtractPaths(out_dir).vectors(rec.id, space), arr)
    segs = []
    for i, t in enumerate(turns):
        sub = _spans_within(speech, t.start, t.end)
        custom = {"words": asr[i]["words"], "speech_sec": round(sum(s.duration for s in sub), 3)}
        ov = overlap_in(second, raw, t.start, t.end)
        if ov:                                   # [[start, end, [speaker, second speaker]], ...] (extract/overlap.py)
            custom["overlap"] = ov
        segs.append(Segment(
            id=f"{rec.id}_ext_{i:04d}", recording_id=rec.id, start=t.start, end=t.end, speaker=t.speaker,
            text=texts[i], labels=labels[i], embeddings={s: i for s in sorted(vectors)}, source="extracted",
            custom=custom))
    write_jsonl(seg_p, segs)
    _write_json(s2_p, {"timing": timing, "labelers": [_name(s) for s in st["labelers"]],
                       "domain_emb": _name(st["domain_emb"]), "key": key})
    return timing
