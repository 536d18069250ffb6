"""Extraction quality against ground truth -> ``results/metrics/extract_<domain>.json``.

Metrics (each ``None`` when the domain has nothing to score):

* ``vad_f1``: frame F1 (10 ms frames) of stage-1 speech regions vs the union of ground-truth
  segments that carry words (emotion, clinical; coughs and other events are not speech).
* ``der``: diarization error rate (pyannote.metrics) of the diarizer's turns vs ground-truth
  speakers, collar ``extract.metrics.der_collar`` s in total (±half around each reference
  boundary), overlapped speech scored (``skip_overlap=False``); ``der_segments`` scores the
  final chunked/merged segments instead (gaps bridged by the merge rule count as false alarm).
* ``wer``: jiwer WER of the concatenated transcripts per recording, lower-cased, punctuation
  removed, numbers left as words.
* ``boundary_f1``: song-boundary F1 with a ±3 s window (reference boundary = middle of the
  crossfade between consecutive ground-truth songs), one-to-one matching.
* ``emotion_accuracy``, ``avd_pearson``: every ground-truth utterance gets the labels of the
  extracted segment that overlaps it most.
* ``cough_count_accuracy``, ``cough_f1``: per ground-truth segment, detected bursts whose
  middle falls inside it vs its ``cough_count``; F1 over "has a cough".
* ``symptom_kws`` / ``symptom_asr_baseline``: precision, recall and F1 of reported-symptom
  evidence per ground-truth spoken turn (:func:`symptom_metrics`); ``symptom_recording_accuracy``.
* ``tier_accuracy``: per ground-truth song, majority tier of the extracted chunks inside it.
* ``rtf``: seconds per second of audio for each stage (from the extraction report).

>>> frame_f1([(0, 1)], [(0.5, 1.5)], 2.0)
0.5
"""
from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

from harp_lib.config import Config, load_config
from harp_lib.core import audio
from harp_lib.core.atomic import write_text
from harp_lib.core.labels import RESPIRATORY_TERMS
from harp_lib.core.paths import DataPaths, ExtractPaths
from harp_lib.core.rttm import read_rttm
from harp_lib.core.results_io import deterministic_metrics, results_path, timings_path, write_json
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Recording, Segment
from harp_lib.core.segments import SegmentSet
from harp_lib.extract.settings import extract_settings, model_for

__all__ = ["frame_f1", "der", "wer", "boundary_f1", "evaluate_domain", "extract_metrics", "sample_der"]


def _mask(spans, dur, step):
    n = int(round(dur / step))
    m = np.zeros(n, bool)
    for s, e in spans:
        m[max(0, int(round(s / step))):min(n, int(round(e / step)))] = True
    return m


def frame_f1(ref: Sequence[tuple], hyp: Sequence[tuple], duration: float, step: float = 0.01) -> float:
    """F1 of speech frames (``step`` s) between two span lists."""
    r, h = _mask(ref, duration, step), _mask(hyp, duration, step)
    tp = float((r & h).sum())
    if r.sum() + h.sum() == 0:
        return 1.0
    return round(float(2 * tp / (r.sum() + h.sum())), 4)


def _annotation(turns):
    from pyannote.core import Annotation, Segment as PSeg  # heavy: pyannote (~0.45 s)
    a = Annotation()
    for i, (s, e, spk) in enumerate(turns):
        if e > s:
            a[PSeg(s, e), i] = spk
    return a


def der(ref_turns, hyp_turns, collar: float = 0.5, skip_overlap: bool = False, uem=None) -> dict:
    """DER and its components from ``[(start, end, speaker)]`` lists (pyannote.metrics).

    >>> der([(0, 10, "a"), (10, 20, "b")], [(0, 10, "x"), (10, 20, "y")])["der"]
    0.0
    """
    from pyannote.metrics.diarization import DiarizationErrorRate  # heavy: pyannote (~0.45 s)
    metric = DiarizationErrorRate(collar=collar, skip_overlap=skip_overlap)
    d = metric(_annotation(ref_turns), _annotation(hyp_turns), detailed=True)
    total = d["total"] or 1e-9
    return {"der": round(d["diarization error rate"], 4),
            "false_alarm": round(d["false alarm"] / total, 4), "missed": round(d["missed detection"] / total, 4),
            "confusion": round(d["confusion"] / total, 4), "scored_sec": round(d["total"], 3)}


def _norm_text(t: str) -> str:
    t = t.lower().replace("’", "'")
    t = re.sub(r"[^a-z0-9' ]+", " ", t)
    return re.sub(r"\s+", " ", t).strip()


def wer(refs: Sequence[str], hyps: Sequence[str]) -> Optional[float]:
    """Corpus WER over normalised text pairs (jiwer).

    >>> wer(["Hello, World!"], ["hello word"])
    0.5
    """
    import jiwer  # heavy: jiwer, only when WER is scored
    pairs = [(_norm_text(r), _norm_text(h)) for r, h in zip(refs, hyps) if _norm_text(r)]
    if not pairs:
        return None
    return round(float(jiwer.wer([p[0] for p in pairs], [p[1] or "<empty>" for p in pairs])), 4)


def boundary_f1(ref: Sequence[float], hyp: Sequence[float], tol: float = 3.0) -> dict:
    """Greedy one-to-one matching of boundary times within ``tol`` seconds.

    >>> boundary_f1([100.0, 200.0], [101.0, 150.0])["f1"]
    0.5
    """
    used, tp = set(), 0
    for r in sorted(ref):
        best = None
        for j, h in enumerate(hyp):
            if j not in used and abs(h - r) <= tol and (best is None or abs(h - r) < abs(hyp[best] - r)):
                best = j
        if best is not None:
            used.add(best)
            tp += 1
    p = tp / len(hyp) if hyp else (1.0 if not ref else 0.0)
    rc = tp / len(ref) if ref else 1.0
    f = 2 * p * rc / (p + rc) if p + rc else 0.0
    return {"precision": round(p, 4), "recall": round(rc, 4), "f1": round(f, 4), "n_ref": len(ref), "n_hyp": len(hyp)}


def _best_overlap(seg: Segment, cands: Sequence[Segment]) -> Optional[Segment]:
    best, ov = None, 0.0
    for c in cands:
        o = min(seg.end, c.end) - max(seg.start, c.start)
        if o > ov:
            best, ov = c, o
    return best


def _pearson(a, b) -> Optional[float]:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 3 or a.std() < 1e-9 or b.std() < 1e-9:
        return None
    return round(float(np.corrcoef(a, b)[0, 1]), 4)


def evaluate_recordings(domain: str, recs: Sequence[Recording], gt: dict, ext: dict, stage1: dict,
                        mcfg: Mapping) -> dict:
    """All metrics for one domain from in-memory ground truth / extraction (see module doc)."""
    out: dict = {"domain": domain, "n_recordings": len(recs)}
    if domain in ("emotion", "clinical"):
        out.update(_speech_metrics(recs, gt, ext, stage1, mcfg))
    if domain == "emotion":
        out.update(_emotion_label_metrics(recs, gt, ext))
    if domain == "clinical":
        out.update(_cough_metrics(recs, gt, ext))
        out.update(symptom_metrics(recs, gt, ext))
    if domain == "song":
        out.update(_song_metrics(recs, gt, ext, float(mcfg["boundary_tol_sec"])))
    return out


def _speech_metrics(recs, gt: dict, ext: dict, stage1: dict, mcfg: Mapping) -> dict:
    """VAD frame F1, DER (raw diarization and final segments) and WER of the spoken domains."""
    step, collar = float(mcfg["frame_sec"]), float(mcfg["der_collar"])
    skip_ov = bool(mcfg["der_skip_overlap"])
    f1s, ders, ders_seg, refs, hyps = [], [], [], [], []
    for r in recs:
        g = [s for s in gt.get(r.id, []) if s.speaker and s.text.strip()]   # spoken words only
        speech_ref = [(s.start, s.end) for s in g]
        f1s.append(frame_f1(speech_ref, stage1[r.id]["speech"], r.duration, step))
        ref_turns = [(s.start, s.end, s.speaker) for s in g]
        ders.append(der(ref_turns, stage1[r.id]["raw"], collar, skip_ov))
        ders_seg.append(der(ref_turns, [(s.start, s.end, s.speaker) for s in ext[r.id]], collar, skip_ov))
        refs.append(" ".join(s.text for s in sorted(g, key=lambda s: s.start)))
        hyps.append(" ".join(s.text for s in ext[r.id]))
    tot = sum(d["scored_sec"] for d in ders) or 1e-9
    out: dict = {}
    out["vad_f1"] = round(float(np.mean(f1s)), 4)
    out["der"] = round(sum(d["der"] * d["scored_sec"] for d in ders) / tot, 4)
    out["der_components"] = {k: round(sum(d[k] * d["scored_sec"] for d in ders) / tot, 4)
                             for k in ("false_alarm", "missed", "confusion")}
    out["der_segments"] = round(sum(d["der"] * d["scored_sec"] for d in ders_seg) / tot, 4)
    out["der_settings"] = {"collar_total_sec": collar, "skip_overlap": skip_ov}
    out["wer"] = wer(refs, hyps)
    out["per_recording"] = {r.id: {"vad_f1": f, "der": d["der"]} for r, f, d in zip(recs, f1s, ders)}
    return out


def _emotion_label_metrics(recs, gt: dict, ext: dict) -> dict:
    """Primary-emotion accuracy and A/V/D Pearson over GT segments matched by best overlap."""
    hit, n, avd = 0, 0, {k: ([], []) for k in ("arousal", "valence", "dominance")}
    for r in recs:
        for s in gt.get(r.id, []):
            if not s.labels.get("primary"):
                continue
            e = _best_overlap(s, ext[r.id])
            if e is None:
                continue
            n += 1
            hit += e.labels.get("primary") == s.labels["primary"]
            for k in avd:
                if isinstance(s.labels.get(k), (int, float)) and isinstance(e.labels.get(k), (int, float)):
                    avd[k][0].append(s.labels[k])
                    avd[k][1].append(e.labels[k])
    return {"emotion_accuracy": round(hit / n, 4) if n else None, "emotion_n": n,
            "avd_pearson": {k: _pearson(*v) for k, v in avd.items()}}


def _cough_metrics(recs, gt: dict, ext: dict) -> dict:
    """Cough-count accuracy and cough F1 per GT segment (an event counts where its middle falls)."""
    ok, n, tp, fp, fn = 0, 0, 0, 0, 0
    for r in recs:
        times = [((a + b) / 2) for s in ext[r.id] for a, b in s.labels.get("event_times", [])]
        for s in gt.get(r.id, []):
            if "cough_count" not in s.labels:
                continue
            pred = sum(s.start <= t < s.end for t in times)
            true = int(s.labels["cough_count"])
            n += 1
            ok += pred == true
            tp += pred > 0 and true > 0
            fp += pred > 0 and true == 0
            fn += pred == 0 and true > 0
    return {"cough_count_accuracy": round(ok / n, 4) if n else None,
            "cough_f1": round(2 * tp / (2 * tp + fp + fn), 4) if (2 * tp + fp + fn) else None,
            "cough_counts": {"n_segments": n, "tp": tp, "fp": fp, "fn": fn}}


def _song_metrics(recs, gt: dict, ext: dict, tol: float) -> dict:
    """Song-boundary F1 (pooled over recordings) and the quality-tier accuracy per song."""
    tiers_ok, tiers_n = 0, 0
    nref = nhyp = tpall = 0
    for r in recs:
        songs = sorted(gt.get(r.id, []), key=lambda s: s.start)
        ref_b = [(a.end + b.start) / 2 for a, b in zip(songs[:-1], songs[1:])]
        ex = ext[r.id]
        hyp_b = [b.start for a, b in zip(ex[:-1], ex[1:]) if a.speaker != b.speaker]
        m = boundary_f1(ref_b, hyp_b, tol)
        nref += m["n_ref"]; nhyp += m["n_hyp"]; tpall += round(m["recall"] * m["n_ref"])
        for s in songs:
            tier = s.labels.get("primary")
            if not tier:
                continue
            inside = [e.labels.get("primary") for e in ex if s.start <= (e.start + e.end) / 2 < s.end]
            if inside:
                tiers_n += 1
                tiers_ok += Counter(inside).most_common(1)[0][0] == tier
    p = tpall / nhyp if nhyp else 1.0
    rc = tpall / nref if nref else 1.0
    return {"boundary_f1": round(2 * p * rc / (p + rc), 4) if p + rc else 0.0,
            "boundary": {"precision": round(p, 4), "recall": round(rc, 4), "tolerance_sec": tol,
                         "n_ref": nref, "n_hyp": nhyp},
            "tier_accuracy": round(tiers_ok / tiers_n, 4) if tiers_n else None, "tier_n": tiers_n}


def _prf(tp: int, fp: int, fn: int) -> dict:
    p = tp / (tp + fp) if tp + fp else None
    r = tp / (tp + fn) if tp + fn else None
    f = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else None
    return {"precision": None if p is None else round(p, 4), "recall": None if r is None else round(r, 4),
            "f1": None if f is None else round(f, 4), "tp": tp, "fp": fp, "fn": fn}


def symptom_metrics(recs: Sequence[Recording], gt: dict, ext: dict) -> dict:
    """Reported-symptom evidence vs the generator's known reports.

    Per ground-truth spoken turn: a report (its ``symptoms`` label is non-empty) against the
    ``symptoms`` label of the extracted segment overlapping it most (``symptom_kws``), and
    against a transcript baseline (a respiratory word of the rule planner's list in the ASR
    text, not after a negation).  Per recording: any segment with symptoms vs any report.
    Returns ``{}`` when no extracted segment carries a ``symptoms`` label.
    """
    if not any("symptoms" in e.labels for r in recs for e in ext[r.id]):
        return {}
    neg = re.compile(r"\b(no|not|never|without|nothing|none|don't)\b")
    k = [0, 0, 0]
    a = [0, 0, 0]
    rec_ok = 0
    for r in recs:
        for s in gt.get(r.id, []):
            if not s.text.strip() or "symptoms" not in s.labels:
                continue
            e = _best_overlap(s, ext[r.id])
            true = bool(s.labels["symptoms"])
            pred = bool(e is not None and e.labels.get("symptoms"))
            low = _norm_text(e.text) if e is not None else ""
            asr = bool(not neg.search(low) and any(re.search(r"\b" + t, low) for t in RESPIRATORY_TERMS))
            for acc, p in ((k, pred), (a, asr)):
                acc[0] += p and true
                acc[1] += p and not true
                acc[2] += true and not p
        rec_ok += any(bool(e.labels.get("symptoms")) for e in ext[r.id]) == \
            any(bool(s.labels.get("symptoms")) for s in gt.get(r.id, []))
    return {"symptom_kws": _prf(*k), "symptom_asr_baseline": _prf(*a),
            "symptom_recording_accuracy": round(rec_ok / len(recs), 4) if recs else None}


def load_stage1(out_dir: Path, rec_id: str) -> dict:
    c = ExtractPaths(out_dir).stage1(rec_id)
    speech = json.loads((c / "speech.json").read_text())
    turns = json.loads((c / "turns.json").read_text())
    done = json.loads((c / "done.json").read_text())
    return {"speech": [tuple(s) for s in speech],       # raw + the second speakers where two talk (overlap backend)
            "raw": [(t["start"], t["end"], t["speaker"]) for t in turns["raw"] + turns.get("overlap", [])],
            "timing": done.get("timing", {}),
            "asr_model": (done.get("key") or {}).get("asr_model")}


def no_ground_truth_message(bench_dir) -> str:
    """Why extraction metrics cannot be computed for a folder without ``segments.jsonl``."""
    return (f"{Path(bench_dir) / 'segments.jsonl'} is missing: extraction metrics compare with ground-truth "
            f"segments, which your own recordings (harp ingest) do not have; nothing was written to results/. "
            f"Run without --metrics, and inspect the recording with `harp ask` or the explorer")


def evaluate_domain(cfg, domain: str, *, run_report: Optional[dict] = None, bench_dir=None, out_dir=None,
                    metrics_path=None, transcripts_path=None) -> dict:
    """Compare ``data/extract/<domain>`` with the benchmark ground truth and write the json (and,
    with ``transcripts_path``, every segment's words as :func:`transcripts_tsv`)."""
    bench_dir = Path(bench_dir or DataPaths(cfg).benchmark(domain))
    out_dir = Path(out_dir or DataPaths(cfg).extract_dir(domain))
    if not (bench_dir / "segments.jsonl").exists():       # checked before anything is written
        raise FileNotFoundError(no_ground_truth_message(bench_dir))
    xp = ExtractPaths(out_dir)
    recs = sorted(read_jsonl(bench_dir / "recordings.jsonl", Recording), key=lambda r: r.id)
    # quarantined recordings (extract/pipeline.py) have no outputs: scored without them, listed
    quarantined = sorted(r.id for r in recs if xp.quarantine(r.id).exists())
    recs = [r for r in recs if r.id not in quarantined]
    gt = SegmentSet.read(bench_dir / "segments.jsonl").by_recording()
    ext = {r.id: read_jsonl(xp.segments(r.id), Segment) for r in recs}
    st1 = {r.id: load_stage1(out_dir, r.id) for r in recs}
    m = evaluate_recordings(domain, recs, gt, ext, st1, cfg.extract.metrics)
    audio_sec = sum(r.duration for r in recs) or 1e-9
    stage_sec: dict[str, float] = {}
    for r in recs:
        t = dict(st1[r.id]["timing"])
        p2 = xp.stage1(r.id) / "stage2.json"
        if p2.exists():
            t.update(json.loads(p2.read_text()).get("timing", {}))
        for k, v in t.items():
            stage_sec[k] = round(stage_sec.get(k, 0.0) + v, 3)
    m["audio_sec"] = round(audio_sec, 3)
    m["quarantined"] = quarantined
    m["stage_sec"] = stage_sec
    m["rtf"] = {k: round(v / audio_sec, 4) for k, v in stage_sec.items()}
    m["rtf_total_cpu"] = round(sum(stage_sec.values()) / audio_sec, 4)
    if run_report:
        m["run"] = {k: run_report.get(k) for k in ("wall_sec", "workers", "rtf_wall")}
    m["backends"] = json.loads((out_dir / "spaces.json").read_text()) if (out_dir / "spaces.json").exists() else {}
    m["profile"] = cfg.profile
    # which model wrote the transcripts (from each recording's stage-1 key; None: no ASR or an old cache)
    m["asr_model"] = ", ".join(sorted({st1[r.id]["asr_model"] for r in recs} - {None})) or None
    path = Path(metrics_path or DataPaths(cfg).results("metrics", f"extract_{domain}.json"))
    write_text(path, json.dumps(m, indent=1, sort_keys=True) + "\n")
    if transcripts_path is not None:
        write_text(Path(transcripts_path), transcripts_tsv(ext))
    return m


def transcripts_tsv(ext: Mapping[str, Sequence[Segment]]) -> str:
    """Every extracted segment's transcript, one tab-separated line (id, start, end, text), by
    recording and start: committed beside the metrics so ``harp verify`` can show the first
    words that moved after a ``dvc repro`` on another machine (harp_lib/app/verify.py)."""
    lines = ["segment_id\tstart\tend\ttext"]
    for rid in sorted(ext):
        for s in sorted(ext[rid], key=lambda s: (s.start, s.id)):
            text = " ".join(str(s.text or "").split())
            lines.append(f"{s.id}\t{s.start:.3f}\t{s.end:.3f}\t{text}")
    return "\n".join(lines) + "\n"


def extract_metrics(cfg: Config, domain: str, run_report: Optional[dict] = None) -> dict:
    """Score ``paths.extract/<domain>`` against ground truth; the full report (with timings) goes to
    ``<paths.data>/timings/extract_<domain>.json`` and the timing-free metrics (a DVC out) to
    ``results/metrics/extract_<domain>.json``.  Returns the full report."""
    m = evaluate_domain(cfg, domain, run_report=run_report, metrics_path=timings_path(cfg, f"extract_{domain}.json"),
                        transcripts_path=results_path(cfg, "metrics", f"extract_{domain}.transcripts.tsv"))
    write_json(results_path(cfg, "metrics", f"extract_{domain}.json"), deterministic_metrics(m), digits=4)
    return m


def sample_der(wav: str | Path, rttm: str | Path, cfg=None, collar: float = 0.5) -> dict:
    """DER of the offline diarizer on the real pyannote sample call (sample.wav + sample.rttm),
    with the overlap backend when ``extract.backends.overlap`` names one (``overlap_sec``: the
    second-speaker time it added)."""
    cfg = cfg or load_config()
    st = extract_settings(cfg, "emotion")
    wave = audio.load(wav, sr=16000)
    t = time.perf_counter()
    speech = model_for("vad", st["vad"]).speech(wave, 16000)
    turns = model_for("diarization", st["segment"]).segment(wave, 16000, speech=speech)
    second = []
    if st["overlap"] is not None:
        turns, second = model_for("overlap", st["overlap"]).resolve(wave, 16000, turns)
    sec = time.perf_counter() - t
    ref = read_rttm(rttm)
    d = der(ref, [(t.start, t.end, t.speaker) for t in turns + second], collar=collar)
    d.update({"n_speakers_ref": len({r[2] for r in ref}), "n_speakers_hyp": len({t.speaker for t in turns}),
              "vad_f1": frame_f1([(a, b) for a, b, _ in ref], [(s.start, s.end) for s in speech], len(wave) / 16000),
              "rtf": round(sec / (len(wave) / 16000), 4), "collar_total_sec": collar,
              "overlap_sec": round(sum(t.duration for t in second), 3)})
    return d


def add_arguments(ap) -> None:
    """``harp quality [--domain D] [--sample]`` options (shared ones: :mod:`harp_lib.app.cli`)."""
    ap.add_argument("--domain", action="append", help="domain(s) (default: params.yaml domains)")
    ap.add_argument("--sample", action="store_true", help="DER on the pyannote sample call only")


def run(cfg, a) -> int:
    if a.sample:
        root = cfg.root / ".cache" / "harp" / "pyannote_sample"
        print(json.dumps(sample_der(root / "sample.wav", root / "sample.rttm", cfg)))
        return 0
    for d in a.domain or cfg.domains:
        m = evaluate_domain(cfg, d)
        print(json.dumps({k: v for k, v in m.items() if not isinstance(v, (dict, list))}))
    return 0
