"""``harp extract``: HARP stage 1 (generic, cached per recording) and stage 2 (domain experts).

Stage 1, per recording, caches under ``data/extract/<domain>/stage1/<rec>/``:
``speech.json`` (VAD) -> ``turns.json`` (diarization or song boundaries, then chunk/merge
rules) -> ``asr.json`` (VAD-gated ASR per turn) -> ``text.npy`` / ``audio.npy`` -> ``done.json``
(backends and per-stage seconds).  Every file is written atomically and every step is
skipped when its file exists, so a killed run resumes where it stopped.

Stage 2 reads that cache, runs the labelers (merged left to right: a later labeler
overwrites a key only with a non-None value) and the domain embedder, and writes
``vectors/<rec>.<space>.npy`` then ``segments/<rec>.jsonl`` (the commit marker) and
``spaces.json``.  ``--stage 2 --force`` re-runs it alone.

One bad recording never aborts the others: a recording that fails (missing, corrupt or
truncated file, NaN samples, a manifest duration that disagrees with the file, a backend
crash on it) is *quarantined* -- ``quarantine/<rec>.json`` says which file and why, its earlier
outputs are removed so the index skips it, ``quarantine.jsonl`` lists every quarantined
recording of the domain, and the run report carries ``quarantine`` / ``n_quarantined``.
A later successful run lifts the quarantine.

Backend specs and the per-process model cache live in :mod:`harp_lib.extract.settings`.
"""
from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from harp_lib.core.atomic import StorageError, drop_stale_parts, is_io_error, storage_error, write_json, write_npy
from harp_lib.config import BackendError, Config, ConfigError, get_backend, positive_int
from harp_lib.core.hashing import file_sha256      # re-exported: the extraction cache key's content half
from harp_lib.core.locks import LockBusy, pool_worker_init, stage_lock
from harp_lib.core.paths import DataPaths, ExtractPaths
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import Recording, Segment, resolve_under
from harp_lib.core.timespan import Span
from harp_lib.extract.settings import resolve_backend  # noqa: F401  (re-exported)
from harp_lib.extract.settings import extract_settings as _settings
from harp_lib.extract.settings import model_for as _model
from harp_lib.extract.settings import backend_model_id
from harp_lib.extract.streaming import clips, open_wave, speech_regions
from harp_lib.extract.overlap import overlap_in
from harp_lib.extract.turns import Turn, segment_turns

__all__ = ["extract_domain", "extract_recording", "stage1", "stage2", "transcribe_turns", "pack_turns", "label_turns", "stage1_key", "stage2_key", "file_sha256",
           "resolve_backend", "load_segments", "write_quarantine"]

SPACES = ("text", "audio", "domain")


# ------------------------------------------------------------------------- helpers
def _name(spec) -> Optional[str]:
    return None if spec is None else (spec["name"] if isinstance(spec, dict) else spec)




def _write_json(path: Path, obj) -> None:
    write_json(path, obj, indent=1, sort_keys=True)


def _write_npy(path: Path, arr: np.ndarray) -> None:
    write_npy(path, arr, dtype=np.float32)


def _read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


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
    import multiprocessing as mp
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=mp.get_context("spawn"),
                             initializer=pool_worker_init) as ex:
        return list(ex.map(fn, jobs))


def _labeler_chunk(args) -> list:
    spec, method, waves, sr, lists, kwlists = args
    return list(getattr(_model("labeler", spec), method)(waves, sr, *lists, **kwlists))


# ------------------------------------------------------------------------- stage 1
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


def stage1_key(st: dict, audio_sha256: Optional[str]) -> dict:
    """What stage 1's outputs depend on: the audio's content, every stage-1 setting with its
    options (not the recording id, not only the backend names) and the ASR's ``model_id``."""
    return _as_json({"audio_sha256": audio_sha256, "sr": st["sr"], "segmenter": st["segmenter"],
                     **{k: st[k] for k in ("vad", "segment", "asr", "text_emb", "audio_emb")},
                     # only when on: caches made without an overlap backend stay valid
                     **({"overlap": st["overlap"]} if st.get("overlap") is not None else {}),
                     # the weights and package versions behind the transcript (whisper_ct2: model + versions)
                     "asr_model": backend_model_id("asr", st["asr"]),
                     "max_seg_sec": st["max_seg_sec"], "min_turn_sec": st["min_turn_sec"],
                     "fill_gaps_sec": st["fill_gaps_sec"]})


def stage2_key(st: dict, audio_sha256: Optional[str]) -> dict:
    """What stage 2's outputs depend on besides stage 1: labelers and domain embedder with options."""
    return _as_json({"audio_sha256": audio_sha256, "labelers": st["labelers"], "domain_emb": st["domain_emb"]})


def _as_json(obj):
    """``obj`` as it reads back from JSON (tuples become lists), so a stored key compares equal."""
    return json.loads(json.dumps(obj, sort_keys=True))


def _stage1_backends(st: dict) -> dict:
    return {k: _name(st[k]) for k in ("vad", "segment", "asr", "text_emb", "audio_emb")} | \
        {"max_seg_sec": st["max_seg_sec"], "min_turn_sec": st["min_turn_sec"], "fill_gaps_sec": st["fill_gaps_sec"]}


# ------------------------------------------------------------------------- stage 2
def _merge_labels(dicts: Sequence[dict]) -> dict:
    out: dict = {}
    for d in dicts:
        for k, v in d.items():
            if v is not None or k not in out:
                out[k] = v
    return out


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


# ------------------------------------------------------------------------- driver
def _drop_stale_parts(cache: Path, out_dir: Path, rec_id: str) -> None:
    """Remove the temporary files a killed writer left for this recording (``<name>.part`` or
    ``<name>.<pid>-<hex>.part``, :func:`harp_lib.core.atomic.part_path`): its stage-1 cache files, its
    segments and vectors.  The extraction folder is locked, so no live writer owns them."""
    xp = ExtractPaths(out_dir)
    finals = [xp.segments(rec_id), *(xp.vectors(rec_id, sp) for sp in SPACES)]
    if cache.is_dir():
        finals += [cache / n for n in ("speech.json", "turns.json", "asr.json", "done.json", "timing.json",
                                       "stage2.json", "text.npy", "audio.npy")]
    for f in finals:
        drop_stale_parts(f, locked=True)


def extract_recording(rec: Recording, bench_dir: Path, out_dir: Path, st: dict, stage: Optional[int] = None,
                      force: bool = False) -> dict:
    """Stage 1 and/or 2 for one recording; returns ``{"id", "duration", "timing"}``."""
    from harp_lib.core import audio
    t0 = time.process_time()
    path = resolve_under(bench_dir, rec.audio_path)          # refuses URLs and ../ escapes
    info = audio.validate(path, decode=False)                # missing, empty, undecodable, truncated
    if rec.duration and abs(info.duration - rec.duration) > audio.DURATION_TOLERANCE_SEC:
        raise audio.AudioError(f"{path}: recordings.jsonl says {rec.duration:.2f} s but the file holds "
                               f"{info.duration:.2f} s; fix the manifest or the file")
    wave = open_wave(path, st["sr"], rec.duration or None, st["stream_above_sec"])
    sha = file_sha256(path)                                  # the cache follows the audio, not the id
    load_sec = time.process_time() - t0
    cache = ExtractPaths(out_dir).stage1(rec.id)
    _drop_stale_parts(cache, out_dir, rec.id)
    timing: dict[str, float] = {"load": round(load_sec, 3)}
    if stage in (None, 1):
        done = stage1(rec, wave, cache, st, force=force, audio_sha256=sha)
        timing.update(done.get("timing", {}))
    if stage in (None, 2):
        timing.update(stage2(rec, wave, cache, out_dir, st, force=force, audio_sha256=sha))
    return {"id": rec.id, "duration": rec.duration, "timing": timing}




def _worker(args):
    """One recording; a failure of the recording's own content comes back as
    ``{"id", "error"}`` (quarantined).  A misconfigured backend (it would fail every recording)
    and a storage fault (full disk, size limit, permissions: :class:`StorageError`) stop the run
    instead, leaving every earlier output in place."""
    rec = args[0]
    try:
        return extract_recording(*args)
    except (BackendError, StorageError):
        raise
    except Exception as e:  # noqa: BLE001 - quarantined with the reason, the others go on
        if is_io_error(e):
            raise storage_error(e) from e
        return {"id": rec.id, "error": f"{type(e).__name__}: {e}"}


def _quarantine(out_dir: Path, rec: Recording, error: str) -> None:
    xp = ExtractPaths(out_dir)
    _write_json(xp.quarantine(rec.id), {"recording_id": rec.id, "audio_path": rec.audio_path, "error": error})
    # the recording leaves the index: the outputs an earlier run of this stage wrote for it
    # (validated id, paths built under out_dir) are removed
    for p in [xp.segments(rec.id), *(xp.vectors(rec.id, space) for space in SPACES)]:
        p.unlink(missing_ok=True)


def write_quarantine(out_dir: Path, rec_ids: Sequence[str]) -> list[dict]:
    """Collect the quarantine markers of ``rec_ids`` into ``quarantine.jsonl`` (sorted by id).

    Per-recording markers keep parallel per-recording runs (``harp_lib.app.scale``) race-free;
    this summary is rewritten from them.  Returns the entries (empty list: none).
    """
    xp = ExtractPaths(out_dir)
    entries = [_read_json(xp.quarantine(r)) for r in sorted(set(rec_ids)) if xp.quarantine(r).exists()]
    write_jsonl(xp.quarantine_summary, entries)
    return entries


def write_spaces(out_dir: Path, st: dict) -> dict:
    """``spaces.json``: {space: {backend, model, dim}} from the registry's class attributes."""
    spaces = {}
    for space, stage in (("text", "text_emb"), ("audio", "audio_emb"), ("domain", "domain_emb")):
        name = _name(st[stage])
        if name is None:
            continue
        cls = get_backend(stage, name)
        spaces[space] = {"backend": name, "model": cls.model_id, "dim": int(cls.dim)}
    _write_json(ExtractPaths(out_dir).spaces, spaces)
    return spaces


def extract_domain(cfg: Config, domain: str, *, stage: Optional[int] = None, recordings: Optional[Sequence[str]] = None,
                   force: bool = False, workers: int = 1, bench_dir: Optional[Path] = None,
                   out_dir: Optional[Path] = None, progress: bool = True, lock: bool = True,
                   manifest: Optional[Path] = None) -> dict:
    """Extract every recording of ``data/benchmark/<domain>/recordings.jsonl``.

    Returns a report with per-recording and per-stage seconds and real-time factors.  The
    output folder is locked for the run (:func:`harp_lib.core.locks.stage_lock`; a second run on it
    waits); ``lock=False`` is for callers that hold it already (``harp_lib.app.scale``).
    ``manifest`` replaces ``<bench_dir>/recordings.jsonl`` (``harp ingest`` extracts from a staged
    manifest and publishes the recordings only when their extraction is complete).

    Usage: ``extract_domain(load_config(), "emotion", workers=2)`` (tests/extract/test_pipeline.py).
    """
    bench_dir = Path(bench_dir or DataPaths(cfg).benchmark(domain))
    out_dir = Path(out_dir or DataPaths(cfg).extract_dir(domain))
    if not lock:
        return _extract_domain(cfg, domain, stage, recordings, force, workers, bench_dir, out_dir, progress, manifest)
    with stage_lock(out_dir, "extract"):
        return _extract_domain(cfg, domain, stage, recordings, force, workers, bench_dir, out_dir, progress, manifest)


def _extract_domain(cfg, domain, stage, recordings, force, workers, bench_dir: Path, out_dir: Path,
                    progress: bool, manifest: Optional[Path] = None) -> dict:
    from harp_lib.core.progress import progress as _progress
    man = Path(manifest) if manifest is not None else bench_dir / "recordings.jsonl"
    if not man.exists():
        raise FileNotFoundError(f"{man}: no recordings manifest (run `harp synth` or `harp prepare` first)")
    recs = sorted(read_jsonl(man, Recording), key=lambda r: r.id)
    all_ids = [r.id for r in recs]
    if recordings is not None:
        want = set(recordings)
        unknown = want - {r.id for r in recs}
        if unknown:
            raise KeyError(f"{man}: unknown recording id(s) {sorted(unknown)}")
        recs = [r for r in recs if r.id in want]
    st = _settings(cfg, domain)
    # fewer recordings than workers: the spare workers decode one recording's turns in parallel
    st["inner_workers"] = workers if len(recs) < workers else 1
    t0 = time.perf_counter()
    jobs = [(r, bench_dir, out_dir, st, stage, force) for r in recs]
    results = []
    bar = _progress(total=len(jobs), desc=f"extract {domain}", mode=None if progress else "off")   # no frozen widget in executed notebooks
    if workers > 1 and len(jobs) > 1:
        import multiprocessing as mp
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=pool_worker_init) as ex:
            try:
                for r in ex.map(_worker, jobs):
                    results.append(r)
                    bar.update()
            except BaseException:        # a storage fault or a bad backend: start nothing more
                ex.shutdown(wait=True, cancel_futures=True)
                raise
    else:
        for j in jobs:
            results.append(_worker(j))
            bar.update()
    bar.close()
    wall = time.perf_counter() - t0
    by_id = {r.id: r for r in recs}
    for r in results:
        if "error" in r:
            _quarantine(out_dir, by_id[r["id"]], r["error"])
        else:
            ExtractPaths(out_dir).quarantine(r["id"]).unlink(missing_ok=True)
    results = [r for r in results if "error" not in r]
    quarantine = write_quarantine(out_dir, all_ids)
    spaces = write_spaces(out_dir, st)
    return {"domain": domain, **speed_report(results, wall), "workers": workers, "spaces": spaces,
            "recordings": results, "quarantine": quarantine, "n_quarantined": len(quarantine)}


def speed_report(results: list[dict], wall: float) -> dict:
    """Audio seconds, per-stage CPU seconds and real-time factors of per-recording results."""
    audio_sec = sum(r["duration"] for r in results) or 1e-9
    stages: dict[str, float] = {}
    for r in results:
        for k, v in r["timing"].items():
            stages[k] = round(stages.get(k, 0.0) + v, 3)
    return {"n_recordings": len(results), "audio_sec": round(audio_sec, 3), "wall_sec": round(wall, 3),
            "stage_sec": stages, "rtf": {k: round(v / audio_sec, 4) for k, v in stages.items()},
            "rtf_total_cpu": round(sum(stages.values()) / audio_sec, 4),
            "rtf_wall": round(wall / audio_sec, 4)}


def load_segments(out_dir: Path, rec_id: str) -> list[Segment]:
    """Extracted segments of one recording (sorted by start)."""
    return read_jsonl(ExtractPaths(out_dir).segments(rec_id), Segment)


def add_arguments(ap) -> None:
    """``harp extract [--domain D ...] [--stage 1|2] [--force] [--workers N] [--metrics]``."""
    ap.add_argument("--domain", action="append", help="domain(s) to extract (default: params domains)")
    ap.add_argument("--stage", type=int, choices=(1, 2), help="run only stage 1 or stage 2")
    ap.add_argument("--recording", action="append", help="only these recording ids")
    ap.add_argument("--force", action="store_true", help="recompute even when cached")
    ap.add_argument("--workers", type=positive_int, default=None, help="worker processes (default extract.workers)")
    ap.add_argument("--metrics", action="store_true", help="then compare with ground truth and write "
                    "results/metrics/extract_<domain>.json (timings: <paths.data>/timings/)")
    ap.add_argument("--collection", help="extract a user collection (harp ingest) instead of the benchmark "
                    "(no ground truth: no --metrics)")


def run(cfg: Config, a) -> int:
    from harp_lib.extract.paper_models import offline_by_default
    offline_by_default()       # weights come from `harp fetch-weights`; the message says who set it
    domains = a.domain or list(cfg.domains)
    workers = a.workers if a.workers is not None else int(cfg.extract.workers)
    dirs = {d: (None, None) for d in domains}
    if a.collection:
        try:
            root = DataPaths(cfg).user_collection(a.collection)     # written by `harp ingest`
        except ValueError as e:
            print(f"harp extract: {e}", file=sys.stderr)
            return 2
        dirs = {d: (root / d, root / "extract" / d) for d in domains
                if a.domain or (root / d / "recordings.jsonl").exists()}
        if not dirs:
            print(f"harp extract: collection {a.collection!r} has no recordings ({root}); "
                  f"add some with `harp ingest FILE --domain speech|clinical|song`", file=sys.stderr)
            return 2
        domains = list(dirs)
    rc = 0
    for d in domains:
        bench_dir, out_dir = dirs[d]
        try:
            rep = extract_domain(cfg, d, stage=a.stage, recordings=a.recording, force=a.force,
                                 workers=workers, progress=not a.quiet, bench_dir=bench_dir, out_dir=out_dir)
        except KeyError as e:                     # an unknown recording id given with --recording
            raise ConfigError(f"{d}: {e.args[0] if e.args else e}") from e
        except (BackendError, FileNotFoundError, SchemaError, StorageError, LockBusy) as e:
            # SchemaError: a bad manifest line (2); StorageError: full disk / size limit / permissions,
            # a fault (1)
            print(f"harp extract: {d}: {e}", file=sys.stderr)
            return 1 if isinstance(e, StorageError) else 2
        print(json.dumps({k: rep[k] for k in ("domain", "n_recordings", "audio_sec", "wall_sec", "rtf",
                                              "rtf_total_cpu", "rtf_wall", "n_quarantined")}))
        if rep["n_quarantined"]:
            print(f"harp extract: {d}: {rep['n_quarantined']} recording(s) quarantined, listed in "
                  f"{DataPaths(cfg).extract(d).quarantine_summary}:", file=sys.stderr)
            for q in rep["quarantine"]:
                print(f"  {q['recording_id']} ({q['audio_path']}): {q['error']}", file=sys.stderr)
            rc = 1                 # the other recordings' outputs are kept; the next domains still run
        if a.metrics:
            from harp_lib.extract.quality import extract_metrics, no_ground_truth_message
            gt_dir = bench_dir or DataPaths(cfg).benchmark(d)
            if a.collection or not (gt_dir / "segments.jsonl").exists():   # user data: never into results/
                print(f"harp extract: {d}: no --metrics: {no_ground_truth_message(gt_dir)}", file=sys.stderr)
                return 2
            m = extract_metrics(cfg, d, rep)
            print(json.dumps({k: v for k, v in m.items() if not isinstance(v, (dict, list))}))
    return rc

