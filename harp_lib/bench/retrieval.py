"""``harp bench retrieval``: the real retrieve() path over 10^5 / 10^6 synthetic clustered segments."""
from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path
from typing import Optional

import numpy as np

from harp_lib.agent.context import agent_params
from harp_lib.config import Config
from harp_lib.bench.common import _goals, _run_child, _scratch, _self_rss_mb, _verdict
from harp_lib.bench.options import BenchOptions
from harp_lib.core.labels import EMOTIONS
from harp_lib.core.schema import Plan, PlanSet, Recording, Segment
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.retrieval.tools import retrieve


_TOPIC_WORDS = ["piano", "marathon", "garden", "library", "festival", "train", "wedding", "camping", "phone",
                "dog", "cooking", "weather", "football", "reunion", "holiday", "documentary", "school", "house",
                "coffee", "market", "river", "bicycle", "concert", "doctor", "museum", "winter", "election",
                "harvest", "airport", "kitchen", "painting", "soccer"]
_FILLER = ("i think the we really was it that and so very then again today it was just a bit more "
           "quite actually you know".split())


def synthetic_index(n: int, *, seg_per_rec: int = 500, topics: int = 64, spread: float = 0.35,
                    seed: int = 0, dims: Optional[dict] = None):
    """A :class:`harp_lib.retrieval.index.SegmentIndex` of ``n`` synthetic, clustered segments.

    Recordings hold ``seg_per_rec`` consecutive ~7 s turns by 2-4 speakers; each recording
    drifts through a few topics; a segment's text/audio/domain vectors are its topic centroid
    plus Gaussian noise (``spread``), so neighbourhoods are clustered as in real embeddings.
    Returns ``(index, meta)`` with the topic of every row (for query generation).

    >>> ix, meta = synthetic_index(40, seg_per_rec=20, topics=4, dims={"text": 8, "audio": 4, "domain": 4})
    >>> len(ix), len(ix.recording_ids())
    (40, 2)
    """
    dims = dims or {"text": 384, "audio": 256, "domain": 88}
    rng = np.random.default_rng(seed)
    n_rec = max(1, math.ceil(n / seg_per_rec))
    rows = _synthetic_rows(n, n_rec, seg_per_rec, topics, rng)
    topic, _, _, ends, rec_of = rows
    emo = rng.integers(0, len(EMOTIONS), size=n)
    cent, vectors = _synthetic_vectors(topic, dims, topics, spread, rng)
    segs = _synthetic_segments(rows, emo, seg_per_rec, dims, rng)
    spaces = {sp: {"backend": f"synthetic_{sp}", "model": "gaussian mixture", "dim": d} for sp, d in dims.items()}
    ix = SegmentIndex.from_segments(segs, vectors, spaces)
    rec_dur = {f"rec{r:06d}": float(ends[rec_of == r].max()) for r in range(n_rec) if np.any(rec_of == r)}
    return ix, {"topic": topic, "centroids": cent, "rec_dur": rec_dur, "n_rec": n_rec, "dims": dims}


def _synthetic_rows(n: int, n_rec: int, seg_per_rec: int, topics: int, rng) -> tuple:
    """Per row: ``(topic, speaker, start, end, recording)`` arrays; a recording walks through 3-6 topic blocks."""
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
    return topic, speakers, starts, ends, rec_of


def _synthetic_vectors(topic, dims: dict, topics: int, spread: float, rng) -> tuple[dict, dict]:
    """Unit topic centroids per space, and every row's vector: its topic's centroid plus Gaussian noise."""
    n = len(topic)
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
    return cent, vectors


def _synthetic_segments(rows: tuple, emo, seg_per_rec: int, dims: dict, rng) -> list:
    """One Segment per row: filler words around its topic's words, its emotion with a random score."""
    topic, speakers, starts, ends, rec_of = rows
    words = np.array(_TOPIC_WORDS)
    segs = []
    for i in range(len(topic)):
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
    return segs


class _FixedEncoder:
    """Query vectors given up front (query-side embedding time is not part of retrieval)."""

    def __init__(self, vecs: dict):
        self.vecs = vecs

    def text(self, phrase, space="text"):
        return self.vecs[(space, phrase)]

    def clip(self, path, space):
        return self.vecs[(space, str(path))]


class _Ctx:
    """The duck-typed QueryContext fields that :func:`harp_lib.retrieval.tools.retrieve` reads."""

    def __init__(self, index, recording, encoder, params, references):
        self.index, self.recording, self.encoder = index, recording, encoder
        self.params, self.references = params, references
        self.tools = ("time", "keyword", "label", "text_emb", "audio_emb", "domain_emb")
        self.domain = "emotion"
        self.songs = {}


def _make_queries(ix, meta, n_q: int, seed: int):
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


def _rss_now_mb() -> dict:
    """Resident memory of this process now (``/proc/self/status``): total, anonymous, file-backed, peak."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                out[k] = round(int(v.split()[0]) / 1024, 1)
    return {"rss_mb": out.get("VmRSS"), "anon_mb": out.get("RssAnon"), "file_mb": out.get("RssFile"),
            "peak_mb": out.get("VmHWM")}


def _retrieval_child(cfg: Config, args: BenchOptions) -> dict:
    """One index size, two fresh processes: this one (``--phase build``) generates and saves the
    index and the query inputs; a second (``--phase query``) opens it, as the agent tools do, and
    times the queries, so its load time and RSS are the loaded index's alone."""
    if getattr(args, "phase", None) == "query":
        return _query_child(cfg, args)
    n = int(args.n)
    t0 = time.perf_counter()
    ix, meta = synthetic_index(n, seg_per_rec=int(cfg.bench.retrieval_seg_per_rec),
                               topics=int(cfg.bench.retrieval_topics),
                               spread=float(cfg.bench.retrieval_spread), seed=int(cfg.seed))
    build_sec = time.perf_counter() - t0
    tmp = Path(args.out_dir) / f"index_{n}"
    t0 = time.perf_counter()
    ix.save(tmp)
    save_sec = time.perf_counter() - t0
    np.savez(Path(args.out_dir) / f"index_{n}_queries.npz", rec_ids=np.array(sorted(meta["rec_dur"])),
             rec_dur=np.array([meta["rec_dur"][r] for r in sorted(meta["rec_dur"])]),
             **{f"centroid_{sp}": c for sp, c in meta["centroids"].items()})
    disk_mb = sum(p.stat().st_size for p in tmp.glob("*")) / 2 ** 20
    return {"n": n, "n_recordings": meta["n_rec"], "dims": meta["dims"], "build_sec": round(build_sec, 2),
            "save_sec": round(save_sec, 2), "disk_mb": round(disk_mb, 1), "build_peak_rss_mb": round(_self_rss_mb(), 1)}


def _query_child(cfg: Config, args: BenchOptions) -> dict:
    """Open the saved index (memory-mapped), time ``args.queries`` evidence sets, report RSS."""
    n = int(args.n)
    tmp = Path(args.out_dir) / f"index_{n}"
    z = np.load(Path(args.out_dir) / f"index_{n}_queries.npz", allow_pickle=False)
    meta = {"rec_dur": dict(zip(z["rec_ids"].tolist(), z["rec_dur"].tolist())),
            "centroids": {k[len("centroid_"):]: z[k] for k in z.files if k.startswith("centroid_")}}
    params = agent_params(cfg)
    rss0 = _rss_now_mb()
    t0 = time.perf_counter()
    ix = SegmentIndex.load(tmp)
    load_sec = time.perf_counter() - t0
    rss_loaded = _rss_now_mb()
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
    rss_q = _rss_now_mb()
    allv = np.concatenate([np.asarray(v) for v in lat.values()])
    pct = lambda a, q: round(float(np.percentile(a, q)), 3) if len(a) else None  # noqa: E731
    return {"n": n, "memory_mapped": bool(getattr(ix, "memory_mapped", False)), "load_sec": round(load_sec, 3),
            "queries": len(allv), "recordings_queried": len({q[2].id for q in queries}),
            "p50_ms": pct(allv, 50), "p90_ms": pct(allv, 90), "p99_ms": pct(allv, 99),
            "by_window": {k: {"n": len(v), "p50_ms": pct(v, 50), "p99_ms": pct(v, 99)} for k, v in lat.items()},
            # latency percentiles 0, 1, ..., 100 (all windows): the CDF drawn in summary.png
            "cdf_ms": [round(float(x), 4) for x in np.percentile(allv, np.arange(101))] if len(allv) else [],
            "mean_items": round(float(np.mean(n_items)), 2), "rss_before_load_mb": rss0["rss_mb"],
            "rss_after_load_mb": rss_loaded["rss_mb"], "rss_after_queries_mb": rss_q["rss_mb"],
            "rss_after_queries_anon_mb": rss_q["anon_mb"], "rss_after_queries_file_mb": rss_q["file_mb"],
            "max_rss_mb": rss_q["peak_mb"]}


def _previous_rows(path: Path) -> Optional[dict]:
    """The sizes of the last ``retrieval.json`` written (its commit and date), or None."""
    try:
        d = json.loads(path.read_text())
        m = d.get("machine", {})
        prev = d.get("previous") if d.get("previous") and all(r.get("memory_mapped") for r in d["sizes"]) else None
        if prev:                                     # keep the last in-memory figures as the reference
            return prev
        return {"at": f"{m.get('git_commit')} {m.get('time_utc')}",
                "mmap": all(r.get("memory_mapped") for r in d["sizes"]),
                "sizes": [{k: r.get(k) for k in ("n", "p50_ms", "p99_ms", "load_sec", "disk_mb", "max_rss_mb")}
                          for r in d["sizes"]]}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def bench_retrieval(cfg: Config, args: BenchOptions) -> dict:
    sizes = [int(x) for x in (args.sizes or cfg.bench.retrieval_sizes)]
    nq = int(args.queries or cfg.bench.retrieval_queries)
    scratch = _scratch(cfg, args) / "retrieval"
    scratch.mkdir(parents=True, exist_ok=True)
    g = _goals(cfg)
    rows = [_measure_size(cfg, n, nq, scratch) for n in sizes]
    res = {"sizes": rows, "goals": {k: v for k, v in g.items() if k.startswith("retrieval")}}
    verdicts = _retrieval_verdicts(rows, g)
    res["verdicts"] = verdicts
    prev = _previous_rows(Path(args.out or cfg.root / "results" / "bench") / "retrieval.json")
    md = _retrieval_md(cfg, nq, rows)
    if prev:
        md += _previous_md(prev)
    res["previous"] = prev
    md += ["", "Goals: " + "; ".join(f"{k}: {v}" for k, v in verdicts.items()) +
           f" (p50 ≤ {g['retrieval_p50_ms_1e5']} ms and p99 ≤ {g['retrieval_p99_ms_1e5']} ms at 10^5, "
           f"p50 ≤ {g['retrieval_p50_ms_1e6']} ms at 10^6)."]
    return res | {"_md": md}


def _measure_size(cfg: Config, n: int, nq: int, scratch: Path) -> dict:
    """One index size: build and save it in one child, time ``nq`` queries in another, then delete it."""
    ca = ["_retrieval_child", "--n", str(n), "--queries", str(nq), "--out-dir", str(scratch),
          "--profile", cfg.profile, "--params", str(cfg.root / "params.yaml")]
    try:
        r, _ = _run_child(ca + ["--phase", "build"])
        q, _ = _run_child(ca + ["--phase", "query"])
    finally:
        shutil.rmtree(scratch / f"index_{n}", ignore_errors=True)
        (scratch / f"index_{n}_queries.npz").unlink(missing_ok=True)
    r.update(q)
    r["rss_over_disk"] = round(r["max_rss_mb"] / max(r["disk_mb"], 1e-9), 2)
    return r


def _retrieval_verdicts(rows: list[dict], g: dict) -> dict:
    """The latency goals of the 10^5 and 10^6 rows: met or MISSED."""
    verdicts = {}
    for r in rows:
        if r["n"] == 100_000:
            verdicts["p50_1e5"] = _verdict(r["p50_ms"], g["retrieval_p50_ms_1e5"])
            verdicts["p99_1e5"] = _verdict(r["p99_ms"], g["retrieval_p99_ms_1e5"])
        if r["n"] == 1_000_000:
            verdicts["p50_1e6"] = _verdict(r["p50_ms"], g["retrieval_p50_ms_1e6"])
    return verdicts


def _retrieval_md(cfg: Config, nq: int, rows: list[dict]) -> list[str]:
    """The Markdown method note and the table of one row per index size."""
    md = [f"One evidence set with all six tools (time, keyword, label, text/audio/domain vectors), merge and "
          f"top-{cfg.agent.top_k} through `harp_lib.retrieval.tools.retrieve` on a `SegmentIndex` saved by one "
          f"process and opened with `SegmentIndex.load` (memory-mapped, index format 2) in a fresh one, so load "
          f"time and RSS are the opened index's alone; {nq} queries per size (first 20 warm-up), windows ⅓ point "
          f"(±30 s), ⅓ 5-min range, ⅓ whole recording; synthetic segments: recordings of "
          f"{cfg.bench.retrieval_seg_per_rec} turns, Gaussian-mixture vectors around {cfg.bench.retrieval_topics} "
          f"topic centroids; query vectors precomputed (embedding the query is not retrieval).  RSS is "
          f"`/proc/self/status` VmRSS of the query process (anonymous + file-backed pages of the mapped index) "
          f"before load, after load and after the queries; peak is VmHWM.", "",
          "| segments | recordings (queried) | p50 ms | p90 ms | p99 ms | full-recording p50 / p99 ms | build s | "
          "save s | load s | disk MB | RSS MB before / after load / after queries (anon + file) | peak RSS MB | "
          "peak RSS / disk |",
          "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        f = r["by_window"]["full"]
        md.append(f"| {r['n']:,} | {r['n_recordings']:,} ({r['recordings_queried']:,}) | {r['p50_ms']} | "
                  f"{r['p90_ms']} | {r['p99_ms']} | {f['p50_ms']} / {f['p99_ms']} | {r['build_sec']} | "
                  f"{r['save_sec']} | {r['load_sec']} | {r['disk_mb']} | {r['rss_before_load_mb']} / "
                  f"{r['rss_after_load_mb']} / {r['rss_after_queries_mb']} ({r['rss_after_queries_anon_mb']} + "
                  f"{r['rss_after_queries_file_mb']}) | {r['max_rss_mb']} | {r['rss_over_disk']} |")
    return md


def _previous_md(prev: dict) -> list[str]:
    """The Markdown table of the previous run's sizes, for comparison."""
    md = ["", f"The previous run of this bench ({prev['at']}), for comparison "
          f"({'its index read into memory' if not prev['mmap'] else 'memory-mapped'}; its RSS was the "
          f"process peak including building the synthetic index):", "",
          "| segments | p50 ms | p99 ms | load s | disk MB | peak RSS MB |", "|---:|---:|---:|---:|---:|---:|"]
    md += [f"| {r['n']:,} | {r['p50_ms']} | {r['p99_ms']} | {r['load_sec']} | {r['disk_mb']} | "
           f"{r['max_rss_mb']} |" for r in prev["sizes"]]
    return md
