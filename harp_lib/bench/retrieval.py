"""``harp bench retrieval``: the real retrieve() path over 10^5 / 10^6 synthetic clustered segments."""
from __future__ import annotations

import math
import shutil
import time
from pathlib import Path
from typing import Optional

import numpy as np

from ..config import Config
from .common import _goals, _run_child, _scratch, _self_rss_mb, _verdict
from .options import BenchOptions


_TOPIC_WORDS = ["piano", "marathon", "garden", "library", "festival", "train", "wedding", "camping", "phone",
                "dog", "cooking", "weather", "football", "reunion", "holiday", "documentary", "school", "house",
                "coffee", "market", "river", "bicycle", "concert", "doctor", "museum", "winter", "election",
                "harvest", "airport", "kitchen", "painting", "soccer"]
_FILLER = ("i think the we really was it that and so very then again today it was just a bit more "
           "quite actually you know".split())


def synthetic_index(n: int, *, seg_per_rec: int = 500, topics: int = 64, spread: float = 0.35,
                    seed: int = 0, dims: Optional[dict] = None):
    """A :class:`harp_lib.index.SegmentIndex` of ``n`` synthetic, clustered segments.

    Recordings hold ``seg_per_rec`` consecutive ~7 s turns by 2-4 speakers; each recording
    drifts through a few topics; a segment's text/audio/domain vectors are its topic centroid
    plus Gaussian noise (``spread``), so neighbourhoods are clustered as in real embeddings.
    Returns ``(index, meta)`` with the topic of every row (for query generation).

    >>> ix, meta = synthetic_index(40, seg_per_rec=20, topics=4, dims={"text": 8, "audio": 4, "domain": 4})
    >>> len(ix), len(ix.recording_ids())
    (40, 2)
    """
    from ..index import SegmentIndex
    from ..labels import EMOTIONS
    from ..schema import Segment
    dims = dims or {"text": 384, "audio": 256, "domain": 88}
    rng = np.random.default_rng(seed)
    n_rec = max(1, math.ceil(n / seg_per_rec))
    # topic of each row: a recording walks through 3-6 topic blocks
    topic = np.empty(n, np.int32)
    speakers = np.empty(n, np.int32)
    starts = np.empty(n, np.float64)
    ends = np.empty(n, np.float64)
    rec_of = np.empty(n, np.int32)
    for r in range(n_rec):
        lo, hi = r * seg_per_rec, min(n, (r + 1) * seg_per_rec)
        m = hi - lo
        if m <= 0:
            break
        cuts = np.sort(rng.choice(np.arange(1, max(2, m)), size=min(max(1, m - 1), int(rng.integers(2, 6))), replace=False))
        blocks = np.split(np.arange(m), cuts)
        for b in blocks:
            topic[lo + b] = rng.integers(topics)
        speakers[lo:hi] = rng.integers(0, int(rng.integers(2, 5)), size=m)
        dur = rng.uniform(2.0, 12.0, size=m)
        gaps = rng.uniform(0.1, 1.0, size=m)
        st = np.cumsum(np.concatenate([[0.0], (dur + gaps)[:-1]]))
        starts[lo:hi], ends[lo:hi], rec_of[lo:hi] = st, st + dur, r
    emo = rng.integers(0, len(EMOTIONS), size=n)
    cent = {sp: rng.standard_normal((topics, d)).astype(np.float32) for sp, d in dims.items()}
    for c in cent.values():
        c /= np.linalg.norm(c, axis=1, keepdims=True)
    vectors = {}
    for sp, d in dims.items():
        v = np.empty((n, d), np.float32)
        for a in range(0, n, 100_000):               # chunked: bounded temporaries
            b = min(n, a + 100_000)
            v[a:b] = cent[sp][topic[a:b]] + rng.standard_normal((b - a, d), dtype=np.float32) * (spread / math.sqrt(d) * 4)
        vectors[sp] = v
    words = np.array(_TOPIC_WORDS)
    segs = []
    for i in range(n):
        t = int(topic[i])
        w1, w2 = words[t % len(words)], words[(t * 7 + 3) % len(words)]
        f = _FILLER[i % len(_FILLER)], _FILLER[(i * 3) % len(_FILLER)], _FILLER[(i * 5 + 1) % len(_FILLER)]
        text = f"{f[0]} {w1} {f[1]} {w2} {f[2]}" if i % 3 else f"{f[0]} {f[1]} {w1} {f[2]}"
        e = EMOTIONS[int(emo[i])]
        segs.append(Segment(id=f"rec{int(rec_of[i]):06d}_ext_{i - int(rec_of[i]) * seg_per_rec:04d}",
                            recording_id=f"rec{int(rec_of[i]):06d}", start=float(starts[i]), end=float(ends[i]),
                            speaker=f"SPEAKER_{int(speakers[i]):02d}", text=text,
                            labels={"primary": e, "scores": {e: round(float(0.4 + 0.6 * rng.random()), 3)}},
                            embeddings={sp: i - int(rec_of[i]) * seg_per_rec for sp in dims}, source="extracted"))
    spaces = {sp: {"backend": f"synthetic_{sp}", "model": "gaussian mixture", "dim": d} for sp, d in dims.items()}
    ix = SegmentIndex.from_segments(segs, vectors, spaces)
    rec_dur = {f"rec{r:06d}": float(ends[rec_of == r].max()) for r in range(n_rec) if np.any(rec_of == r)}
    return ix, {"topic": topic, "centroids": cent, "rec_dur": rec_dur, "n_rec": n_rec, "dims": dims}


class _FixedEncoder:
    """Query vectors given up front (query-side embedding time is not part of retrieval)."""

    def __init__(self, vecs: dict):
        self.vecs = vecs

    def text(self, phrase, space="text"):
        return self.vecs[(space, phrase)]

    def clip(self, path, space):
        return self.vecs[(space, str(path))]


class _Ctx:
    """The duck-typed QueryContext fields that :func:`harp_lib.agent.tools.retrieve` reads."""

    def __init__(self, index, recording, encoder, params, references):
        self.index, self.recording, self.encoder = index, recording, encoder
        self.params, self.references = params, references
        self.tools = ("time", "keyword", "label", "text_emb", "audio_emb", "domain_emb")
        self.domain = "emotion"
        self.songs = {}

    def p(self, key):
        return self.params[key]


def _make_queries(ix, meta, n_q: int, seed: int):
    from ..labels import EMOTIONS
    from ..schema import Plan, PlanSet, Recording
    rng = np.random.default_rng(seed + 1)
    recs = sorted(meta["rec_dur"])
    out = []
    for qi in range(n_q):
        rid = recs[int(rng.integers(len(recs)))]
        dur = meta["rec_dur"][rid]
        kind = ("point", "range", "full")[qi % 3]
        if kind == "point":
            t = float(rng.uniform(0, dur))
            lo, hi = max(0.0, t - 30.0), min(dur, t + 30.0)
        elif kind == "range":
            lo = float(rng.uniform(0, max(1.0, dur - 300)))
            hi = min(dur, lo + 300.0)
        else:
            lo, hi = 0.0, dur
        t = int(rng.integers(len(meta["centroids"]["text"])))
        w = _TOPIC_WORDS[t % len(_TOPIC_WORDS)]
        phrase = f"talking about the {w}"
        vecs = {}
        for sp, c in meta["centroids"].items():
            v = c[t] + rng.standard_normal(c.shape[1]).astype(np.float32) * 0.05
            key = (sp, phrase) if sp == "text" else (sp, f"/ref/{qi}_{sp}.wav")
            vecs[key] = v
        ps = PlanSet(localize=kind, start=lo, end=hi, time=True, keyword=w, label=EMOTIONS[int(rng.integers(len(EMOTIONS)))],
                     text_emb=phrase, audio_emb="A", domain_emb="E")
        refs = {"A": Path(f"/ref/{qi}_audio.wav"), "E": Path(f"/ref/{qi}_domain.wav")}
        rec = Recording(id=rid, domain="emotion", audio_path=f"{rid}.wav", duration=round(dur, 3), sample_rate=16000)
        out.append((kind, Plan(sets=(ps,)), rec, vecs, refs))
    return out


def _retrieval_child(cfg: Config, args: BenchOptions) -> dict:
    """One index size in a fresh process: generate, build, save, load, time queries, RSS."""
    from ..agent.context import agent_params
    from ..agent.tools import retrieve
    from ..index import SegmentIndex
    n = int(args.n)
    rss0 = _self_rss_mb()
    t0 = time.perf_counter()
    ix, meta = synthetic_index(n, seg_per_rec=int(cfg.bench.retrieval_seg_per_rec),
                               topics=int(cfg.bench.retrieval_topics),
                               spread=float(cfg.bench.retrieval_spread), seed=int(cfg.seed))
    build_sec = time.perf_counter() - t0
    rss_built = _self_rss_mb()
    tmp = Path(args.out_dir) / f"index_{n}"
    t0 = time.perf_counter()
    ix.save(tmp)
    save_sec = time.perf_counter() - t0
    del ix
    import gc
    gc.collect()
    t0 = time.perf_counter()
    ix = SegmentIndex.load(tmp)
    load_sec = time.perf_counter() - t0
    rss_loaded = _self_rss_mb()
    params = agent_params(cfg)
    queries = _make_queries(ix, meta, int(args.queries), int(cfg.seed))
    lat: dict[str, list[float]] = {"point": [], "range": [], "full": []}
    n_items = []
    for i, (kind, plan, rec, vecs, refs) in enumerate(queries):
        ctx = _Ctx(ix, rec, _FixedEncoder(vecs), params, refs)
        t = time.perf_counter()
        ev = retrieve(plan, ctx)
        dt = (time.perf_counter() - t) * 1000
        if i >= 20:                           # warm-up excluded
            lat[kind].append(dt)
        n_items.append(len(ev.sets[0].items))
        if ev.sets[0].error:
            raise RuntimeError(f"synthetic query {i}: {ev.sets[0].error}")
    allv = np.concatenate([np.asarray(v) for v in lat.values()])
    pct = lambda a, q: round(float(np.percentile(a, q)), 3) if len(a) else None  # noqa: E731
    disk_mb = sum(p.stat().st_size for p in tmp.glob("*")) / 2 ** 20
    shutil.rmtree(tmp, ignore_errors=True)
    return {"n": n, "n_recordings": meta["n_rec"], "dims": meta["dims"], "build_sec": round(build_sec, 2),
            "save_sec": round(save_sec, 2), "load_sec": round(load_sec, 2), "disk_mb": round(disk_mb, 1),
            "queries": len(allv), "p50_ms": pct(allv, 50), "p90_ms": pct(allv, 90), "p99_ms": pct(allv, 99),
            "by_window": {k: {"n": len(v), "p50_ms": pct(v, 50), "p99_ms": pct(v, 99)} for k, v in lat.items()},
            # latency percentiles 0, 1, ..., 100 (all windows): the CDF drawn in summary.png
            "cdf_ms": [round(float(x), 4) for x in np.percentile(allv, np.arange(101))] if len(allv) else [],
            "mean_items": round(float(np.mean(n_items)), 2), "rss_start_mb": round(rss0, 1),
            "rss_after_build_mb": round(rss_built, 1), "rss_after_load_mb": round(rss_loaded, 1),
            "max_rss_mb": round(_self_rss_mb(), 1)}


def bench_retrieval(cfg: Config, args: BenchOptions) -> dict:
    sizes = [int(x) for x in (args.sizes or cfg.bench.retrieval_sizes)]
    nq = int(args.queries or cfg.bench.retrieval_queries)
    scratch = _scratch(cfg, args) / "retrieval"
    scratch.mkdir(parents=True, exist_ok=True)
    g = _goals(cfg)
    rows = []
    for n in sizes:
        ca = ["_retrieval_child", "--n", str(n), "--queries", str(nq), "--out-dir", str(scratch),
              "--profile", cfg.profile, "--params", str(cfg.root / "params.yaml")]
        r, _ = _run_child(ca)
        rows.append(r)
    res = {"sizes": rows, "goals": {k: v for k, v in g.items() if k.startswith("retrieval")}}
    verdicts = {}
    for r in rows:
        if r["n"] == 100_000:
            verdicts["p50_1e5"] = _verdict(r["p50_ms"], g["retrieval_p50_ms_1e5"])
            verdicts["p99_1e5"] = _verdict(r["p99_ms"], g["retrieval_p99_ms_1e5"])
        if r["n"] == 1_000_000:
            verdicts["p50_1e6"] = _verdict(r["p50_ms"], g["retrieval_p50_ms_1e6"])
    res["verdicts"] = verdicts
    md = [f"One evidence set with all six tools (time, keyword, label, text/audio/domain vectors), merge and "
          f"top-{cfg.agent.top_k} through `harp_lib.agent.tools.retrieve` on a `SegmentIndex` saved and "
          f"re-loaded from disk; {nq} queries per size (first 20 warm-up), windows ⅓ point (±30 s), ⅓ 5-min "
          f"range, ⅓ whole recording; synthetic segments: recordings of {cfg.bench.retrieval_seg_per_rec} "
          f"turns, Gaussian-mixture vectors around {cfg.bench.retrieval_topics} topic centroids; "
          f"query vectors precomputed (embedding the query is not retrieval).", "",
          "| segments | recordings | p50 ms | p90 ms | p99 ms | full-recording p50 / p99 ms | build s | save s | load s | disk MB | RSS after load MB | peak RSS MB |",
          "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        f = r["by_window"]["full"]
        md.append(f"| {r['n']:,} | {r['n_recordings']:,} | {r['p50_ms']} | {r['p90_ms']} | {r['p99_ms']} | "
                  f"{f['p50_ms']} / {f['p99_ms']} | {r['build_sec']} | {r['save_sec']} | {r['load_sec']} | "
                  f"{r['disk_mb']} | {r['rss_after_load_mb']} | {r['max_rss_mb']} |")
    md += ["", "Goals: " + "; ".join(f"{k}: {v}" for k, v in verdicts.items()) +
           f" (p50 ≤ {g['retrieval_p50_ms_1e5']} ms and p99 ≤ {g['retrieval_p99_ms_1e5']} ms at 10^5, "
           f"p50 ≤ {g['retrieval_p50_ms_1e6']} ms at 10^6)."]
    return res | {"_md": md}
