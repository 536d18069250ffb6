"""LongEmo candidates per episode: ``st_event`` (consensus labels, :func:`find_st_events`),
``ct_trend`` (continuous traces, :func:`find_ct_trends`), ``multi_spk_window`` (speaker comparison,
:func:`find_multi_spk_windows`), their stratified assignment to query types
(:func:`assign_candidates`) and the locate_hard clusters (:func:`find_clusters`)."""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable, Optional

import numpy as np

from harp_lib.corpora.datasets.common import stratified_pick
from harp_lib.corpora.datasets.longemo_params import DIMS, NON_TARGET_CODES, EmotionParams

__all__ = ["find_st_events", "find_ct_trends", "find_multi_spk_windows", "assign_candidates", "find_clusters",
           "dominant_speaker"]


def _in(segs, t0, t1):
    return [s for s in segs if s["end"] > t0 and s["start"] < t1]


def _single(s) -> Optional[str]:
    g = s["global_speaker2"]
    return g[0] if len(g) == 1 else None


def dominant_speaker(segs, t0, t1, share) -> Optional[str]:
    cov = defaultdict(float)
    for s in _in(segs, t0, t1):
        if _single(s):
            cov[_single(s)] += min(s["end"], t1) - max(s["start"], t0)
    if not cov:
        return None
    best = min(cov, key=lambda k: (-cov[k], k))
    return best if cov[best] / sum(cov.values()) >= share else None


def _ctx(segs, t0, t1, chars):
    return " ".join(s.get("text", "") for s in _in(segs, t0, t1) if s.get("text"))[:chars]


def find_st_events(segs, labels, times, transcripts: Callable[[str], str], p: EmotionParams,
                   exclude: Iterable[str] = ()) -> list[dict]:
    """Annotated utterances usable as state/locate targets (consensus cf >= 0.5, speaker context)."""
    excl = set(exclude)
    out = []
    for n in sorted(labels):
        lab = labels[n]
        if lab["cf"] < p.st_min_cf or n not in times or lab["utterance"] in excl:
            continue
        t0, t1 = times[n]
        spk = dominant_speaker(segs, t0, t1, p.st_spk_share)
        if lab["spkr"].isdigit() and any(lab["spkr"] == _single(s) for s in segs):
            spk = lab["spkr"]
        if spk is None:
            continue
        before = [s for s in _in(segs, t0 - p.st_context_sec, t0) if spk in s["global_speaker2"] and s.get("text")]
        if len(before) < p.st_context_min:
            continue
        seg_text = transcripts(lab["utterance"])
        ctx = " ".join(x for x in (_ctx(segs, t0 - p.ctx_sec, t0, p.ctx_chars), seg_text,
                                   _ctx(segs, t1, t1 + p.ctx_sec, p.ctx_chars)) if x)
        out.append({"shape": "st_event", "n": n, "t0": round(t0, 3), "t1": round(t1, 3), "spk": spk,
                    "code": lab["code"], "cf": lab["cf"], "votes": lab["votes"], "act": lab["act"],
                    "val": lab["val"], "dom": lab["dom"], "seg_text": seg_text, "ctx": ctx,
                    "score": lab["cf"]})
    return out


def _halves(pts, t, p):
    half = p.ct_window_sec / 2
    a = [m for at, m in pts if t <= at < t + half]
    b = [m for at, m in pts if t + half <= at <= t + p.ct_window_sec]
    return (float(np.mean(a)), float(np.mean(b))) if a and b else None


def _windows(pts, p):
    if not pts:
        return
    t, last = pts[0][0], pts[-1][0]
    while t + p.ct_window_sec <= last + 1e-9:
        yield round(t, 3)
        t += p.ct_step_sec


def find_ct_trends(segs, traces, p: EmotionParams) -> list[dict]:
    """Rising/falling trace windows after per-dimension NMS, plus one flat window per dimension."""
    out = []
    for dim in DIMS:
        raw = []
        for t in _windows(traces.get(dim, []), p):
            h = _halves(traces[dim], t, p)
            if h and abs(h[1] - h[0]) > p.ct_min_delta:
                spk = dominant_speaker(segs, t, t + p.ct_window_sec, p.ct_spk_share)
                if spk:
                    raw.append((t, h, spk))
        kept = []
        for t, h, spk in sorted(raw, key=lambda r: (-abs(r[1][1] - r[1][0]), r[0])):
            if all(not (t < k[0] + p.ct_window_sec + p.ct_nms_sec and t + p.ct_window_sec > k[0] - p.ct_nms_sec)
                   for k in kept):
                kept.append((t, h, spk))
        for t, (m1, m2), spk in sorted(kept):
            d = round(m2 - m1, 3)
            out.append({"shape": "ct_trend", "dim": dim, "t0": t, "t1": round(t + p.ct_window_sec, 3),
                        "spk": spk, "delta": d, "half1": round(m1, 3), "half2": round(m2, 3),
                        "direction": "rising" if d > 0 else "falling", "score": abs(d),
                        "ctx": _ctx(segs, t, t + p.ct_window_sec, p.ctx_chars)})
    trends = [(c["t0"], c["t1"]) for c in out]
    for dim in DIMS:
        best = None
        for t in _windows(traces.get(dim, []), p):
            if any(t < e1 + p.ct_nms_sec and t + p.ct_window_sec > e0 - p.ct_nms_sec for e0, e1 in trends):
                continue
            h = _halves(traces[dim], t, p)
            spk = dominant_speaker(segs, t, t + p.ct_window_sec, p.ct_spk_share) if h else None
            if h and spk and (best is None or abs(h[1] - h[0]) < best[0]):
                best = (abs(h[1] - h[0]), t, h, spk)
        if best:
            _, t, (m1, m2), spk = best
            out.append({"shape": "ct_trend", "dim": dim, "t0": t, "t1": round(t + p.ct_window_sec, 3),
                        "spk": spk, "delta": round(m2 - m1, 3), "half1": round(m1, 3), "half2": round(m2, 3),
                        "direction": "none", "score": -abs(m2 - m1),
                        "ctx": _ctx(segs, t, t + p.ct_window_sec, p.ctx_chars)})
    return out


def find_multi_spk_windows(segs, p: EmotionParams) -> list[dict]:
    """Windows with >= 2 well-covered speakers whose automatic AVD differ by > 0.10."""
    out = []
    if not segs:
        return out
    t, last = segs[0]["start"], max(s["end"] for s in segs)
    while t + p.multi_window_sec <= last + 1e-9:
        t1 = t + p.multi_window_sec
        inside = _in(segs, t, t1)
        cov = defaultdict(float)
        for s in inside:
            if _single(s):
                cov[_single(s)] += min(s["end"], t1) - max(s["start"], t)
        active = sorted(k for k, c in cov.items() if c > p.multi_min_cover_sec)
        best = None
        if len(active) >= 2:
            for dim in DIMS:
                vals = {}
                for spk in active:
                    v = [s[dim.lower()] for s in inside if _single(s) == spk and s.get("num_speakers", 1) == 1
                         and s[dim.lower()] is not None]
                    if v:
                        vals[spk] = round(float(np.mean(v)), 3)
                if len(vals) >= 2:
                    spread = max(vals.values()) - min(vals.values())
                    if best is None or spread > best[1]:
                        best = (dim, spread, vals)
        if best and best[1] > p.multi_min_spread:
            out.append({"shape": "multi_spk_window", "t0": round(t, 3), "t1": round(t1, 3), "dim": best[0],
                        "spk_val": best[2], "score": round(best[1], 3),
                        "ctx": _ctx(segs, t, t1, p.ctx_chars)})
        t += p.multi_step_sec
    return out


def assign_candidates(cands: list[dict], p: EmotionParams, rng: np.random.Generator) -> dict[str, list[dict]]:
    """Stratified choice of at most ``cap_per_type`` candidates per query type.

    Filled most-constrained first (comparison, change, state, locate); change keeps
    ``flat_slots`` for a flat window; an st_event may serve both state and locate.
    """
    def pool(pred):
        return sorted((c for c in cands if pred(c)), key=lambda c: (-c["score"], c["t0"]))
    cap = p.cap_per_type
    out = {"comparison": stratified_pick(pool(lambda c: c["shape"] == "multi_spk_window"), cap, rng)}
    flats = stratified_pick(pool(lambda c: c["shape"] == "ct_trend" and c["direction"] == "none"),
                            min(p.flat_slots, cap), rng)
    trends = stratified_pick(pool(lambda c: c["shape"] == "ct_trend" and c["direction"] != "none"),
                             cap - len(flats), rng)
    out["change"] = trends + flats
    out["state"] = stratified_pick(pool(lambda c: c["shape"] == "st_event" and c["code"] not in NON_TARGET_CODES), cap, rng)
    out["locate"] = stratified_pick(pool(lambda c: c["shape"] == "st_event"
                                         and c["code"] not in NON_TARGET_CODES + ("N",)), cap, rng)
    return out


def find_clusters(events: list[dict], p: EmotionParams) -> list[dict]:
    """locate_hard clusters: per (speaker, emotion) the densest run of >= 3 events within 300 s."""
    groups = defaultdict(list)
    for e in events:
        if e["code"] not in NON_TARGET_CODES + ("N",):
            groups[(e["spk"], e["code"])].append(e)
    clusters = []
    for key in sorted(groups):
        ev = sorted(groups[key], key=lambda e: e["t0"])
        best = None
        for i in range(len(ev)):
            j = i
            while j + 1 < len(ev) and ev[j + 1]["t1"] - ev[i]["t0"] <= p.cluster_span_sec:
                j += 1
            if j - i + 1 >= p.cluster_min_events and (best is None or j - i > best[1] - best[0]):
                best = (i, j)
        if best:
            members = ev[best[0]: best[1] + 1]
            cen = np.mean([[e["act"], e["val"], e["dom"]] for e in members], axis=0)
            target = max(members, key=lambda e: (float(np.linalg.norm(np.array([e["act"], e["val"], e["dom"]]) - cen)), -e["t0"]))
            clusters.append({"spk": key[0], "code": key[1], "members": members, "target": target})
    clusters.sort(key=lambda c: (-len(c["members"]), c["members"][0]["t0"]))
    return clusters[: p.max_hard_per_episode]
