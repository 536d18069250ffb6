"""The per-turn steps of extraction that need more than a backend call: gap filling, ASR of
the turns (packed into ~30-s clips for Whisper) and labelling, each optionally spread over
worker processes with the same result for any worker count.

:mod:`harp_lib.extract.stage1_generic` and :mod:`harp_lib.extract.stage2_domain` run them;
notebooks/01_extract calls them one by one on an excerpt.
"""
from __future__ import annotations

import multiprocessing as mp
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Optional, Sequence

import numpy as np

from harp_lib.core.locks import pool_worker_init
from harp_lib.core.timespan import Span
from harp_lib.extract.settings import model_for as _model
from harp_lib.extract.streaming import clips
from harp_lib.extract.turns import Turn

__all__ = ["fill_gaps", "transcribe_turns", "pack_turns", "label_turns"]


def fill_gaps(turns: Sequence[Turn], max_gap: float) -> list[Turn]:
    """Extend each turn to the next turn's start when the pause is at most ``max_gap`` s,
    so non-speech events between turns (coughs) land inside a segment.

    >>> fill_gaps([Turn(0, 2, "A"), Turn(3, 5, "B"), Turn(20, 22, "A")], 3.0)
    [Turn(start=0.0, end=3.0, speaker='A'), Turn(start=3.0, end=5.0, speaker='B'), Turn(start=20.0, end=22.0, speaker='A')]
    """
    ts = sorted(turns, key=lambda t: t.start)
    if max_gap <= 0:
        return ts
    return [Turn(t.start, nxt.start, t.speaker) if 0 < nxt.start - t.end <= max_gap else t
            for t, nxt in zip(ts, ts[1:])] + ts[-1:]


def _spans_within(speech: Sequence[Span], s: float, e: float) -> list[Span]:
    out = []
    for sp in speech:
        a, b = max(sp.start, s), min(sp.end, e)
        if b > a:
            out.append(Span(a - s, b - s))
    return out


# ------------------------------------------------------------------------- steps
# One function per step that needs more than a backend call; stage1/stage2 run them and
# notebooks/01_extract calls them one by one on an excerpt.
def transcribe_turns(st: dict, wave, turns: Sequence[Turn], speech: Sequence[Span], *,
                     workers: int = 1, cpu: Optional[dict] = None) -> list[dict]:
    """ASR of every turn, only where the VAD found speech: ``[{"text", "words": [[w, t0, t1]]}]``
    with word times in seconds of the recording.

    A backend with ``pack_sec`` > 0 (whisper_ct2) decodes runs of consecutive turns whose speech
    fits in ``pack_sec`` seconds as one clip (:func:`pack_turns`) and gives each word to the turn
    holding its middle: Whisper encodes 30 s whatever the clip's length, so one pass per ~30 s
    instead of one per ~5-s turn (6x fewer on the mini podcast).  Other backends decode turn by turn.

    ``workers`` > 1 decodes contiguous chunks of those jobs in that many processes (a recording
    extracted alone otherwise leaves the second core idle).  Every job is decoded from the
    decoder's initial state and the packing does not depend on ``workers``, so the result is
    the same for any ``workers`` (tests/extract/test_pipeline.py).  ``cpu``: the workers' CPU
    seconds are added to ``cpu["asr_workers"]`` (process_time of the caller misses them).
    """
    if st["asr"] is None:
        return [{"text": "", "words": []} for _ in turns]
    sr = st["sr"]
    asr = _model("asr", st["asr"])
    groups = pack_turns(turns, speech, getattr(asr, "pack_sec", 0.0), getattr(asr, "region_pad_sec", 0.0))
    jobs = []
    for a, b in groups:
        s0, s1 = turns[a].start, turns[b - 1].end
        jobs.append((np.asarray(wave[int(s0 * sr):int(s1 * sr)], dtype=np.float32),
                     [(t.start - s0, t.end - s0) for t in turns[a:b]], _spans_within(speech, s0, s1), s0))
    n_chunks = min(len(jobs), 4 * workers) if workers > 1 and len(turns) >= 8 else 1
    if n_chunks <= 1:
        out, _ = _asr_chunk((st["asr"], sr, jobs))
        return out
    # contiguous chunks of about equal audio length, dealt in order (results keep turn order)
    chunks = [(st["asr"], sr, jobs[a:b]) for a, b in _chunk_bounds([len(j[0]) for j in jobs], n_chunks)]
    out: list[dict] = []
    for part, sec in _spawn_map(_asr_chunk, chunks, workers):
        out += part
        if cpu is not None:
            cpu["asr_workers"] = round(cpu.get("asr_workers", 0.0) + sec, 3)
    return out


def pack_turns(turns: Sequence[Turn], speech: Sequence[Span], pack_sec: float,
               pad_sec: float = 0.0) -> list[tuple[int, int]]:
    """Consecutive turn ranges ``[a, b)`` to decode as one clip: a range grows while its decoded
    stretch (first to last speech inside its turns, padded by ``pad_sec``) stays within
    ``pack_sec``; turns without speech join the range they sit in.  ``pack_sec`` <= 0: one
    range per turn.

    >>> T = [Turn(0, 10, "A"), Turn(10, 20, "B"), Turn(20, 40, "A")]
    >>> S = [Span(1, 9), Span(11, 19), Span(21, 39)]
    >>> pack_turns(T, S, 30.0), pack_turns(T, S, 0.0)
    ([(0, 2), (2, 3)], [(0, 1), (1, 2), (2, 3)])
    """
    if pack_sec <= 0:
        return [(i, i + 1) for i in range(len(turns))]
    groups, a, first = [], 0, None          # first: start of the open range's first speech
    for i, t in enumerate(turns):
        sub = _spans_within(speech, t.start, t.end)
        if sub and first is not None and t.start + sub[-1].end + pad_sec - first > pack_sec:
            groups.append((a, i))
            a, first = i, None
        if sub and first is None:
            first = t.start + sub[0].start - pad_sec
    if turns:
        groups.append((a, len(turns)))
    return groups


def _asr_chunk(args) -> tuple[list[dict], float]:
    """Decode ``[(clip, its turns' (start, end) relative to it, speech spans relative to it, clip
    start)]``: one result per turn; returns the results and the CPU seconds spent (worker
    process or caller)."""
    spec, sr, jobs = args
    t0 = time.process_time()
    asr = _model("asr", spec)
    out = []
    for clip, bounds, sub, start in jobs:
        parts = asr.transcribe_turns(clip, sr, bounds, speech=sub) if hasattr(asr, "transcribe_turns") \
            else [asr.transcribe(clip, sr, speech=sub)]
        for r in parts:
            r["words"] = [[w, round(a + start, 3), round(b + start, 3)] for w, a, b in r["words"]]
            out.append(r)
    return out, time.process_time() - t0


def label_turns(st: dict, wave, turns: Sequence[Turn], texts: Sequence[str], waves=None, *,
                workers: int = 1) -> list[dict]:
    """Every labeler of ``st["labelers"]`` on every turn's clip (labelers with ``pad_sec`` also
    see that much audio before the turn), merged left to right: one label dict per turn.
    ``waves``: the turns' clips when the caller has them already.

    ``workers`` > 1 spreads the per-turn work over that many processes where it does not depend
    on the other turns: labelers with ``segment_independent = True`` label contiguous chunks of
    turns; labelers with ``parallel_features = True`` (per-speaker normalising ones) compute
    their per-clip ``features`` in chunks and label the recording with them in this process.
    The labels are the same for any ``workers`` (tests/extract/test_pipeline.py)."""
    sr = st["sr"]
    waves = clips(wave, turns, sr) if waves is None else waves
    speakers = [t.speaker for t in turns]
    per_labeler = []
    par = workers > 1 and len(turns) >= 8
    for spec in st["labelers"]:
        lab = _model("labeler", spec)
        if hasattr(lab, "label_wave"):          # one pass over the whole recording (sound events: pauses too)
            per_labeler.append(lab.label_wave(wave, sr, turns))
            continue
        if not hasattr(lab, "label_recording"):
            per_labeler.append([lab.label(w, sr, text=x, speaker=s) for w, x, s in zip(waves, texts, speakers)])
            continue
        ws, kw = waves, {}
        pad = float(getattr(lab, "pad_sec", 0.0))
        if pad > 0:
            pads = [min(pad, t.start) for t in turns]
            ws = clips(wave, [(t.start - p, t.end) for t, p in zip(turns, pads)], sr)
            kw = {"pads": pads, "offsets": [t.start - p for t, p in zip(turns, pads)]}
        if par and getattr(lab, "segment_independent", False):
            per_labeler.append(_chunked(spec, "label_recording", workers, ws, sr, texts, speakers, **kw))
        elif par and getattr(lab, "parallel_features", False):
            feats = _chunked(spec, "features_of", workers, ws, sr)
            per_labeler.append(lab.label_recording(ws, sr, texts, speakers, feats=feats, **kw))
        else:
            per_labeler.append(lab.label_recording(ws, sr, texts, speakers, **kw))
    return [_merge_labels([pl[i] for pl in per_labeler]) for i in range(len(turns))]


def _chunk_bounds(sizes: Sequence[int], n_chunks: int) -> list[tuple[int, int]]:
    """Contiguous ``[a, b)`` index ranges of about equal total ``sizes`` (at least one item each)."""
    total = sum(sizes) or 1
    bounds, acc = [0], 0
    for i, n in enumerate(sizes):
        acc += n
        if acc >= total * len(bounds) / n_chunks and len(bounds) < n_chunks and i + 1 < len(sizes):
            bounds.append(i + 1)
    bounds.append(len(sizes))
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def _chunked(spec, method: str, workers: int, waves: Sequence[np.ndarray], sr: int, *lists, **kwlists) -> list:
    """``labeler.<method>(waves, sr, *lists, **kwlists)`` over contiguous chunks of the items in
    ``workers`` processes (spawn); the per-item results concatenated in order."""
    parts = _chunk_bounds([len(w) for w in waves], 4 * workers)
    jobs = [(spec, method, list(waves[a:b]), sr, [list(x[a:b]) for x in lists],
             {k: list(v[a:b]) for k, v in kwlists.items()}) for a, b in parts]
    return [r for part in _spawn_map(_labeler_chunk, jobs, workers) for r in part]


def _spawn_map(fn, jobs: Sequence, workers: int) -> list:
    """``[fn(j) for j in jobs]`` in ``min(workers, len(jobs))`` spawned worker processes, in order."""
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=mp.get_context("spawn"),
                             initializer=pool_worker_init) as ex:
        return list(ex.map(fn, jobs))


def _labeler_chunk(args) -> list:
    spec, method, waves, sr, lists, kwlists = args
    return list(getattr(_model("labeler", spec), method)(waves, sr, *lists, **kwlists))


def _merge_labels(dicts: Sequence[dict]) -> dict:
    out: dict = {}
    for d in dicts:
        for k, v in d.items():
            if v is not None or k not in out:
                out[k] = v
    return out
