"""``harp bench baselines``: our diarization, retrieval and Whisper use against simple baselines."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from harp_lib.agent.context import agent_params
from harp_lib.config import BackendError, Config
from harp_lib.bench.common import _scratch
from harp_lib.bench.extract import _limited_bench
from harp_lib.bench.options import BenchOptions
from harp_lib.bench.retrieval import _Ctx, _FixedEncoder, _make_queries, synthetic_index
from harp_lib.core import audio
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Recording, Segment
from harp_lib.extract.paper import _device, hf_load
from harp_lib.extract.pipeline import extract_domain
from harp_lib.extract.quality import der, wer
from harp_lib.retrieval.tools import retrieve


def _mfcc_kmeans_turns(wav: Path, speech, k: int, step: float = 1.0, seed: int = 0):
    """Naive diarization: MFCC mean+std of 1 s windows inside speech, k-means with fixed k."""
    import librosa  # heavy: librosa (numba, scipy)
    from sklearn.cluster import KMeans  # heavy: scikit-learn (~1.6 s)
    w = audio.load(wav, 16000)
    feats, spans = [], []
    for s, e in speech:
        t = s
        while t < e - 0.2:
            b = min(e, t + step)
            x = w[int(t * 16000):int(b * 16000)]
            if len(x) >= 1600:
                m = librosa.feature.mfcc(y=x, sr=16000, n_mfcc=20)
                feats.append(np.concatenate([m.mean(1), m.std(1)]))
                spans.append((t, b))
            t = b
    if not feats:
        return []
    f = np.asarray(feats)
    f = (f - f.mean(0)) / (f.std(0) + 1e-9)
    kk = min(k, len(f))
    lab = KMeans(kk, n_init=10, random_state=seed).fit_predict(f) if kk > 1 else np.zeros(len(f), int)
    return [(a, b, f"K{l}") for (a, b), l in zip(spans, lab)]


def _baseline_diarization(cfg: Config, args: BenchOptions, scratch: Path) -> dict:
    collar = float(cfg.extract.metrics.der_collar)
    out = {}
    for d in [d for d in ("emotion", "clinical") if (cfg.path("paths.benchmark") / d / "recordings.jsonl").exists()]:
        src = cfg.path("paths.benchmark") / d
        bench_dir = _limited_bench(src, args.limit, scratch)
        ext = _scratch(cfg, args) / "extract" / d
        recs = sorted(read_jsonl(bench_dir / "recordings.jsonl", Recording), key=lambda r: r.id)
        if not all((ext / "stage1" / r.id / "turns.json").exists() for r in recs):
            extract_domain(cfg, d, stage=1, workers=int(cfg.extract.workers), bench_dir=bench_dir,
                           out_dir=ext, progress=not args.quiet)
        gt = read_jsonl(src / "segments.jsonl", Segment)
        tot = {"ours": [], "one_speaker": [], "mfcc_kmeans": []}
        t_ours = t_naive = 0.0
        for r in recs:
            cache = ext / "stage1" / r.id
            ref = [(s.start, s.end, s.speaker) for s in gt if s.recording_id == r.id and s.speaker and s.text.strip()]
            speech = json.loads((cache / "speech.json").read_text())
            raw = json.loads((cache / "turns.json").read_text())["raw"]
            t_ours += json.loads((cache / "timing.json").read_text()).get("diarization", 0.0)
            k = len(r.custom.get("speakers") or []) or (2 if d == "clinical" else 3)
            t = time.perf_counter()
            km = _mfcc_kmeans_turns(bench_dir / r.audio_path, speech, k)
            t_naive += time.perf_counter() - t
            tot["ours"].append(der(ref, [(x["start"], x["end"], x["speaker"]) for x in raw], collar))
            tot["one_speaker"].append(der(ref, [(a, b, "S") for a, b in speech], collar))
            tot["mfcc_kmeans"].append(der(ref, km, collar))
        agg = {}
        for name, ds in tot.items():
            sc = sum(x["scored_sec"] for x in ds) or 1e-9
            agg[name] = {"der": round(sum(x["der"] * x["scored_sec"] for x in ds) / sc, 4),
                         "confusion": round(sum(x["confusion"] * x["scored_sec"] for x in ds) / sc, 4)}
        agg["ours"]["sec"] = round(t_ours, 2)
        agg["mfcc_kmeans"]["sec"] = round(t_naive, 2)
        out[d] = {"n_recordings": len(recs), **agg}
    return out


def _brute_force(ix_arrays, rec: str, lo: float, hi: float, keyword: str, label: str, qvecs: dict,
                 k_vec: int, k_kw: int, top_k: int):
    """Numpy brute force over *all* rows: mask by recording and window, score every tool, merge."""
    rec_ids, starts, ends, texts, prims, pscores, mats = ix_arrays
    m = (rec_ids == rec) & (ends > lo) & (starts < hi)
    rows = np.flatnonzero(m)
    hits: dict[str, dict[int, float]] = {}
    ov = (np.minimum(ends[rows], hi) - np.maximum(starts[rows], lo)) / (hi - lo)
    hits["time"] = {int(r): round(float(v), 3) for r, v in zip(rows, ov)}
    has = np.char.find(texts[rows], f" {keyword} ") >= 0
    kw = rows[has]
    kw = kw[np.lexsort((starts[kw],))][:k_kw]
    hits["keyword"] = {int(r): 1.0 for r in kw}
    lm = rows[prims[rows] == label]
    hits["label"] = {int(r): round(float(pscores[r]), 3) for r in lm}
    for sp, q in qvecs.items():
        sims = mats[sp] @ (q / np.linalg.norm(q))
        s = sims[rows]
        top = rows[np.argsort(-np.round(s, 6), kind="stable")[:k_vec]]
        hits[sp] = {int(r): round(float(sims[r]), 4) for r in top}
    pooled: dict[int, float] = {}
    for tool in hits.values():
        for r, v in tool.items():
            pooled[r] = pooled.get(r, 0.0) + v
    ranked = sorted(pooled, key=lambda r: (-round(pooled[r], 6), starts[r]))[:top_k]
    return sorted(ranked, key=lambda r: starts[r])


def _baseline_retrieval(cfg: Config, args: BenchOptions) -> dict:
    """Our retrieve() vs numpy brute force over every row, same queries, at 10^5 segments."""
    n = int(args.baseline_n or 100_000)
    ix, meta = synthetic_index(n, seg_per_rec=int(cfg.bench.retrieval_seg_per_rec),
                               topics=int(cfg.bench.retrieval_topics),
                               spread=float(cfg.bench.retrieval_spread), seed=int(cfg.seed))
    segs = ix._segs                                         # rows in index order
    arrays = (np.array([s.recording_id for s in segs]), np.array([s.start for s in segs]),
              np.array([s.end for s in segs]), np.array([" " + s.text.lower() + " " for s in segs]),
              np.array([s.labels["primary"] for s in segs]),
              np.array([s.labels["scores"][s.labels["primary"]] for s in segs]),
              {sp: ix._vecs[sp] for sp in ix.spaces})
    params = agent_params(cfg)
    qs = _make_queries(ix, meta, int(args.baseline_queries or 300), int(cfg.seed) + 7)
    t_ours, t_bf, agree, n_cmp = [], [], 0, 0
    for kind, plan, rec, vecs, refs in qs:
        ctx = _Ctx(ix, rec, _FixedEncoder(vecs), params, refs)
        t = time.perf_counter()
        ev = retrieve(plan, ctx)
        t_ours.append((time.perf_counter() - t) * 1000)
        ps = plan.sets[0]
        qv = {"text": vecs[("text", ps.text_emb)], "audio": vecs[("audio", str(refs["A"]))],
              "domain": vecs[("domain", str(refs["E"]))]}
        t = time.perf_counter()
        bf = _brute_force(arrays, rec.id, ps.start, min(ps.end, rec.duration), ps.keyword, ps.label, qv,
                          int(params.vector_hits), int(params.keyword_hits), int(params.top_k))
        t_bf.append((time.perf_counter() - t) * 1000)
        ours = [it.segment_id for it in ev.sets[0].items]
        agree += ours == [segs[r].id for r in bf]
        n_cmp += 1
    p = lambda a, q: round(float(np.percentile(a, q)), 3)  # noqa: E731
    return {"n": n, "queries": n_cmp, "identical_top_k": agree, "agreement": round(agree / n_cmp, 4),
            "ours_p50_ms": p(t_ours, 50), "ours_p99_ms": p(t_ours, 99),
            "brute_force_p50_ms": p(t_bf, 50), "brute_force_p99_ms": p(t_bf, 99)}


def whisper_compare(model, features, decode, clips: Sequence[np.ndarray], refs: Sequence[str], *,
                    batch_size: int = 8, generate_kwargs: Optional[dict] = None) -> dict:
    """One Whisper ``generate`` call per segment against batches of ``batch_size`` segments.

    ``model`` is a ``transformers`` ``WhisperForConditionalGeneration``, ``features`` its
    ``WhisperFeatureExtractor`` and ``decode`` maps token-id lists to texts (the processor's
    ``batch_decode``).  Whisper pads every input to 30 s, so batching changes no encoder input;
    with greedy decoding both ways give the same words and the difference is time alone.
    Returns seconds, speed-up, WER of each way against ``refs`` and the identical fraction.
    """
    import torch  # heavy: torch (~1.2 s)
    gk = {"max_new_tokens": 128, "do_sample": False, "num_beams": 1, **(generate_kwargs or {})}

    def run(batch):
        f = features(list(batch), sampling_rate=16000, return_tensors="pt")
        with torch.inference_mode():
            out = model.generate(f.input_features.to(model.device, model.dtype), **gk)
        ids = getattr(out, "sequences", out)
        return decode(ids.tolist())

    run(clips[:1])                                      # warm-up (allocations, kernels)
    t0 = time.perf_counter()
    per = [run([c])[0] for c in clips]
    t_per = time.perf_counter() - t0
    t0 = time.perf_counter()
    bat: list[str] = []
    for i in range(0, len(clips), batch_size):
        bat += run(clips[i:i + batch_size])
    t_bat = time.perf_counter() - t0
    audio_sec = sum(len(c) for c in clips) / 16000
    return {"n_segments": len(clips), "audio_sec": round(audio_sec, 2), "batch_size": batch_size,
            "per_segment_sec": round(t_per, 3), "batched_sec": round(t_bat, 3),
            "speedup": round(t_per / max(t_bat, 1e-9), 3),
            "rtf_per_segment": round(t_per / max(audio_sec, 1e-9), 4),
            "rtf_batched": round(t_bat / max(audio_sec, 1e-9), 4),
            "wer_per_segment": wer(list(refs), per), "wer_batched": wer(list(refs), bat),
            "identical_fraction": round(sum(a == b for a, b in zip(per, bat)) / max(len(clips), 1), 4)}


def _baseline_whisper(cfg: Config, args: BenchOptions) -> dict:
    """Whisper per segment vs batched on benchmark turns, with the paper's checkpoint when the
    local Hugging Face cache has it (``bench.whisper_model``); otherwise skipped with the reason."""
    model_id = str(cfg.bench.whisper_model)
    try:
        import torch  # heavy: torch (~1.2 s)
        from transformers import WhisperForConditionalGeneration, WhisperProcessor  # heavy: transformers (torch)
        proc = hf_load(f"Whisper {model_id}", WhisperProcessor.from_pretrained, model_id)
        model = hf_load(f"Whisper {model_id}", WhisperForConditionalGeneration.from_pretrained, model_id)
    except (BackendError, ImportError) as e:
        return {"model": model_id, "skipped": f"{model_id} is not available here ({' '.join(str(e).split())[:600]})"}
    dev = _device(torch)
    model = model.to(dev, torch.float16 if dev == "cuda" else torch.float32).eval()
    src = cfg.path("paths.benchmark") / "emotion"
    recs = {r.id: r for r in read_jsonl(src / "recordings.jsonl", Recording)}
    turns = [s for s in read_jsonl(src / "segments.jsonl", Segment) if s.text.strip() and s.duration <= 30.0]
    turns = turns[: int(args.whisper_segments or cfg.bench.whisper_segments)]
    clips = [audio.load(src / recs[s.recording_id].audio_path, 16000, start=s.start, end=s.end)
             for s in turns]
    res = whisper_compare(model, proc.feature_extractor, lambda ids: [t.strip() for t in proc.batch_decode(ids, skip_special_tokens=True)],
                          clips, [s.text for s in turns], batch_size=int(cfg.bench.whisper_batch),
                          generate_kwargs={"language": "en", "task": "transcribe"})
    return {"model": model_id, "device": dev, **res}


def bench_baselines(cfg: Config, args: BenchOptions) -> dict:
    scratch = _scratch(cfg, args) / "baselines"
    scratch.mkdir(parents=True, exist_ok=True)
    diar = _baseline_diarization(cfg, args, scratch)
    ret = _baseline_retrieval(cfg, args)
    wh = _baseline_whisper(cfg, args)
    md = ["## Diarization (DER, collar "
          f"{cfg.extract.metrics.der_collar}; lower is better)", "",
          "| domain | recordings | ours (resemblyzer + spectral) | one speaker over VAD speech | MFCC k-means (k = true count) |",
          "|---|---:|---:|---:|---:|"]
    for d, r in diar.items():
        md.append(f"| {d} | {r['n_recordings']} | {r['ours']['der']:.3f} (conf. {r['ours']['confusion']:.3f}, {r['ours']['sec']} s) | "
                  f"{r['one_speaker']['der']:.3f} | {r['mfcc_kmeans']['der']:.3f} (conf. {r['mfcc_kmeans']['confusion']:.3f}, {r['mfcc_kmeans']['sec']} s) |")
    md += ["", "The MFCC baseline is given the true speaker count (ours estimates it); both use the same VAD regions.", "",
           f"## Retrieval at {ret['n']:,} segments ({ret['queries']} queries)", "",
           "| | p50 ms | p99 ms |", "|---|---:|---:|",
           f"| ours (`tools.retrieve`, per-recording row ranges) | {ret['ours_p50_ms']} | {ret['ours_p99_ms']} |",
           f"| numpy brute force over every row | {ret['brute_force_p50_ms']} | {ret['brute_force_p99_ms']} |", "",
           f"Identical top-3 ids in {ret['identical_top_k']}/{ret['queries']} queries ({ret['agreement']:.1%}).", "",
           "## Whisper per-segment vs batched ASR", ""]
    if "skipped" in wh:
        md.append(f"Skipped: {wh['skipped']}.  Runs where the checkpoint is in the Hugging Face cache "
                  f"(`bench.whisper_model`; transformers' Whisper, greedy decoding).")
    else:
        md += [f"{wh['model']} on {wh['device']}, {wh['n_segments']} benchmark turns ({wh['audio_sec']:.0f} s), greedy.", "",
               "| | seconds | RTF | WER |", "|---|---:|---:|---:|",
               f"| one call per segment | {wh['per_segment_sec']} | {wh['rtf_per_segment']} | {wh['wer_per_segment']} |",
               f"| batches of {wh['batch_size']} | {wh['batched_sec']} | {wh['rtf_batched']} | {wh['wer_batched']} |", "",
               f"Speed-up {wh['speedup']:.2f}×; identical transcripts for {wh['identical_fraction']:.0%} of the turns."]
    return {"diarization": diar, "retrieval": ret, "whisper": wh, "_md": md}
