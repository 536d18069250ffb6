"""Fit the aesthetics labeler's v5 weights on songs the benchmark never uses, and report.

    python scripts/calibrate_aesthetics.py            # ~10 min on 2 cores the first time (renders cached)

1. Renders ``--n`` calibration songs (default 160) and ``--val-n`` validation songs (80) with the
   benchmark's own song renderer (harp_lib/corpora/synth/song.py: music21 works, fluidsynth, the seven
   production degradations at 0-4 factors per song), but from calibration seeds (777, 4242) and a
   ``calib`` recording id, so no calibration song is a benchmark song (works may repeat: the pool
   of chamber works is small).  Renders go through the synth cache (``.cache/harp/synth``).
2. Measures :func:`harp_lib.extract.aesthetics_measures.aesthetic_features` on each song (fades trimmed).
3. Fits, per dimension, an intercept and non-negative weights over
   :func:`harp_lib.extract.aesthetics_labeler.aesthetic_terms` (bounded least squares): monotone, so a worse
   measurement never raises a score.
4. Writes the model to ``harp_lib/data/aesthetics_v5.json`` and a report
   (``results/bench/aesthetics_calibration.{json,md}``): MAE, correlation and pairwise accuracy
   (the benchmark's tie rule, |delta| < 0.25) of the v4 heuristic and of the fitted model on the
   calibration, the validation songs and - when ``data/benchmark/song`` exists - the mini medley's
   songs measured on their ground-truth spans (report only: nothing is fitted on them).
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harp_lib.extract.aesthetics_labeler import (DEFAULT_AESTHETIC_RANGES, AestheticsLabeler,  # noqa: E402
                                                 aesthetic_terms)
from harp_lib.extract.aesthetics_measures import aesthetic_features  # noqa: E402
from harp_lib.core.labels import AESTHETIC_DIMENSIONS  # noqa: E402

SR = 16000
TIE = 0.25


def render_set(n: int, seed: int, cache_dir: str, song_sec=(50, 60)) -> list[dict]:
    """``n`` calibration songs: their production, ground-truth scores and features."""
    from tqdm import tqdm
    from harp_lib.corpora.synth import song as S
    from harp_lib.corpora.synth.core import SynthCache, rng_for
    cache = SynthCache(cache_dir)
    feat_cache = Path(cache_dir) / "calib_features.json"
    known = json.loads(feat_cache.read_text()) if feat_cache.exists() else {}
    pool = S._work_pool()
    rng = rng_for(seed, "calib", "works")
    chorales = [pool[len(S.WORKS) + int(i)] for i in rng.permutation(len(pool) - len(S.WORKS))]
    works = [S.WORKS[int(i)] for i in rng.permutation(len(S.WORKS))]
    notes: dict = {}
    rows = []
    for i in tqdm(range(n), desc=f"calibration songs (seed {seed})"):
        work = works[(i // 2) % len(works)] if i % 2 == 0 else chorales[i // 2]
        plan = S._song_plan("calib", i, work, i % 5, seed, {"song_sec": list(song_sec)},
                            S.score_length(work, cache, notes))
        key = SynthCache.key("calib_features", {"plan": plan, "sf2": S.soundfont().name, "feat": "v5.2"})
        if key not in known:
            w = S.render_song(plan, cache, notes)
            known[key] = aesthetic_features(w[int(1.5 * SR):-int(2.5 * SR)], SR)
        rows.append({"work": work, "production": {f: int(plan["production"].get(f, 0)) for f in S.FACTORS},
                     "truth": S.aesthetic_scores(plan["production"]), "features": known[key]})
    feat_cache.parent.mkdir(parents=True, exist_ok=True)
    feat_cache.write_text(json.dumps(known))
    return rows


def mini_songs(bench: Path) -> list[dict]:
    """The benchmark medley's songs, measured on their ground-truth spans (3 s trimmed each side)."""
    from harp_lib.core import audio
    out = []
    for line in (bench / "segments.jsonl").read_text().splitlines():
        s = json.loads(line)
        w = audio.load(bench / "recordings" / f"{s['recording_id']}.wav", sr=SR, start=s["start"] + 3.0,
                       end=s["end"] - 3.0)
        out.append({"index": s["custom"]["song_index"], "recording_id": s["recording_id"],
                    "truth": s["labels"]["scores"], "features": aesthetic_features(w, SR)})
    return out


def fit(rows: list[dict], ranges: dict) -> dict:
    from scipy.optimize import lsq_linear
    terms = list(aesthetic_terms(rows[0]["features"], ranges))
    X = np.array([[aesthetic_terms(r["features"], ranges)[t] for t in terms] for r in rows])
    A = np.hstack([np.ones((len(X), 1)), X])
    dims = {}
    for d in AESTHETIC_DIMENSIONS:
        y = np.array([r["truth"][d] for r in rows])
        res = lsq_linear(A, y, bounds=([-np.inf] + [0.0] * len(terms), [np.inf] * (len(terms) + 1)))
        dims[d] = {"intercept": round(float(res.x[0]), 4),
                   "weights": {t: round(float(w), 4) for t, w in zip(terms, res.x[1:]) if w > 1e-4}}
    return {"ranges": {k: list(v) for k, v in ranges.items()}, "dims": dims}


def pairwise(truth: np.ndarray, pred: np.ndarray, pairs=None) -> float:
    pairs = pairs if pairs is not None else list(itertools.combinations(range(len(truth)), 2))

    def win(v, a, b):
        return "tie" if abs(v[a] - v[b]) < TIE else ("A" if v[a] > v[b] else "B")
    return float(np.mean([win(truth, a, b) == win(pred, a, b) for a, b in pairs])) if pairs else float("nan")


def evaluate(rows: list[dict], labelers: dict, pairs_by_type: dict | None = None) -> dict:
    truth = np.array([np.mean([r["truth"][d] for d in AESTHETIC_DIMENSIONS]) for r in rows])
    out = {}
    for name, lab in labelers.items():
        pred = np.array([np.mean(list(lab.scores(r["features"]).values())) for r in rows])
        m = {"mae": round(float(np.mean(np.abs(pred - truth))), 3),
             "r": round(float(np.corrcoef(pred, truth)[0, 1]), 3),
             "pairwise_all": round(100 * pairwise(truth, pred), 1),
             "range": [round(float(pred.min()), 2), round(float(pred.max()), 2)]}
        for qt, pairs in (pairs_by_type or {}).items():
            m[f"pairwise_{qt}"] = round(100 * pairwise(truth, pred, pairs), 1)
        out[name] = m
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=160)
    ap.add_argument("--seed", type=int, default=777)
    ap.add_argument("--val-n", type=int, default=80)
    ap.add_argument("--val-seed", type=int, default=4242)
    ap.add_argument("--cache", default=".cache/harp/synth")
    ap.add_argument("--bench", default="data/benchmark/song")
    ap.add_argument("--model", default=str(ROOT / "harp_lib" / "data" / "aesthetics_v5.json"))
    ap.add_argument("--report", default=str(ROOT / "results" / "bench" / "aesthetics_calibration"))
    a = ap.parse_args(argv)
    train = render_set(a.n, a.seed, a.cache)
    val = render_set(a.val_n, a.val_seed, a.cache)
    model = fit(train, DEFAULT_AESTHETIC_RANGES)
    model["fit"] = {"script": "scripts/calibrate_aesthetics.py", "n": a.n, "seed": a.seed,
                    "val_n": a.val_n, "val_seed": a.val_seed, "method": "bounded least squares, weights >= 0"}
    Path(a.model).write_text(json.dumps(model, indent=1) + "\n")
    labs = {"v4 heuristic": AestheticsLabeler(calibration="heuristic"),
            "v5 fitted": AestheticsLabeler(model_path=a.model)}
    report = {"calibration": evaluate(train, labs), "validation": evaluate(val, labs)}
    bench = Path(a.bench)
    if (bench / "segments.jsonl").exists():
        songs = mini_songs(bench)
        pos = {(s["recording_id"], s["index"]): i for i, s in enumerate(songs)}
        by_type: dict = {}
        for line in (bench / "queries.jsonl").read_text().splitlines():
            q = json.loads(line)
            ji = q.get("judge_info") or {}
            if ji.get("type") == "pairwise":
                by_type.setdefault(q["query_type"], []).append(
                    (pos[(q["recording_id"], ji["song_a"])], pos[(q["recording_id"], ji["song_b"])]))
        report["benchmark_songs"] = evaluate(songs, labs, by_type)
        report["benchmark_songs_note"] = (f"{len(songs)} songs of {bench} on their ground-truth spans; "
                                          "report only, nothing fitted on them")
    report["model"] = model
    rp = Path(a.report)
    rp.parent.mkdir(parents=True, exist_ok=True)
    rp.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    lines = ["# Aesthetics labeler calibration (v5)", "",
             f"Command: `python scripts/calibrate_aesthetics.py` (calibration {a.n} songs, seed {a.seed}; "
             f"validation {a.val_n} songs, seed {a.val_seed}; pairwise accuracy uses the benchmark's tie rule "
             f"|delta| < {TIE}).", ""]
    for part in ("calibration", "validation", "benchmark_songs"):
        if part not in report:
            continue
        keys = list(next(iter(report[part].values())))
        lines += [f"## {part}" + (f" ({report['benchmark_songs_note']})" if part == "benchmark_songs" else ""), "",
                  "| labeler | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
        lines += [f"| {n} | " + " | ".join(str(v) for v in m.values()) + " |" for n, m in report[part].items()]
        lines.append("")
    lines += ["## Fitted weights (intercept + weights over the 1-5 terms)", ""]
    lines += [f"- {d}: {m['intercept']:+.2f} " + " ".join(f"+ {w:.2f}·{t}" for t, w in m["weights"].items())
              for d, m in model["dims"].items()]
    rp.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
