"""Stage ``benchmark`` (notebooks/00_benchmark): build ``paths.benchmark`` and summarise it."""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Any

from harp_lib.config import Config
from harp_lib.core import audio
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.paths import DataPaths
from harp_lib.core.results_io import results_path as _results
from harp_lib.core.results_io import timings_path, write_json
from harp_lib.core.schema import Query, Recording, Segment, resolve_under
from harp_lib.corpora.datasets import cli as datasets_cli
from harp_lib.corpora.synth import generate

__all__ = ["build_benchmark", "benchmark_summary", "Listening", "listening_examples"]


def build_benchmark(cfg: Config, *, progress: bool = True) -> dict:
    """Build ``paths.benchmark``: the generator (``benchmark.source: synth``) or the paper corpora
    (``corpora``: ``harp prepare all`` from ``paths.raw``).  Writes ``results/metrics/benchmark.json``
    (counts and audio minutes) and returns it.  The generator's ``timings.json`` is moved to
    ``<paths.data>/timings/benchmark.json`` so that the folder itself is reproducible.

    Usage: ``build_benchmark(config("ci"))["profile"]`` -> ``'ci'`` (the 00_benchmark notebook).
    """
    source = cfg.benchmark.source
    out = cfg.path("paths.benchmark")
    if source == "synth":
        generate(cfg.get("benchmark.profile"), int(cfg.get("benchmark.seed")), out,
                 domains=list(cfg.get("domains")), progress=progress)
        # generation timings are machine-dependent: keep them out of the (DVC-tracked) folder
        if (out / "timings.json").exists():
            dst = timings_path(cfg, "benchmark.json")
            dst.parent.mkdir(parents=True, exist_ok=True)
            (out / "timings.json").replace(dst)
    elif source == "corpora":
        ap = argparse.ArgumentParser(prog="harp prepare")
        datasets_cli.add_arguments(ap)
        args = ap.parse_args(["all", "--out", str(out)])
        args.quiet = not progress
        if datasets_cli.run(cfg, args) != 0:
            raise RuntimeError(f"`harp prepare all --profile {cfg.profile}` failed; run "
                               f"`harp prepare --check --profile {cfg.profile}` to see which raw files are missing")
    else:
        raise ValueError(f"params.yaml benchmark.source is {source!r}; use 'synth' or 'corpora'")
    summary = benchmark_summary(cfg)
    write_json(_results(cfg, "metrics", "benchmark.json"), summary)
    return summary


def benchmark_summary(cfg: Config) -> dict:
    """Recordings, audio minutes and queries per type of each domain of ``paths.benchmark``."""
    dp = DataPaths(cfg)
    out: dict = {"profile": cfg.profile, "source": cfg.benchmark.source, "domains": {}}
    for d in cfg.get("domains"):
        recs = read_jsonl(dp.recordings_manifest(d), Recording)
        qs = read_jsonl(dp.queries_manifest(d), Query)
        types: dict[str, int] = {}
        for q in qs:
            types[q.query_type] = types.get(q.query_type, 0) + 1
        out["domains"][d] = {"recordings": len(recs), "audio_minutes": round(sum(r.duration for r in recs) / 60, 3),
                             "queries": len(qs), "query_types": dict(sorted(types.items()))}
    out["total_queries"] = sum(v["queries"] for v in out["domains"].values())
    out["total_audio_minutes"] = round(sum(v["audio_minutes"] for v in out["domains"].values()), 3)
    return out


@dataclass(frozen=True)
class Listening:
    """One query with a short excerpt of its recording around the evidence (for an Audio player)."""
    domain: str
    query_id: str
    question: str
    answer: str
    start: float
    end: float
    wave: Any
    sr: int


def listening_examples(cfg: Config, *, seconds: float = 12.0, sr: int = 16000) -> list[Listening]:
    """The first query of each domain and ``seconds`` of audio starting at its first GT segment."""
    dp = DataPaths(cfg)
    out = []
    for d in cfg.get("domains"):
        qs = read_jsonl(dp.queries_manifest(d), Query)
        recs = {r.id: r for r in read_jsonl(dp.recordings_manifest(d), Recording)}
        segs = {s.id: s for s in read_jsonl(dp.segments_manifest(d), Segment)}
        q = next((q for q in qs if q.gt_segment_ids), qs[0])
        rec = recs[q.recording_id]
        t0 = segs[q.gt_segment_ids[0]].start if q.gt_segment_ids else float(q.time_ref or 0.0)
        t0 = max(0.0, min(t0, rec.duration - seconds))
        t1 = min(rec.duration, t0 + seconds)
        wave = audio.load(resolve_under(dp.benchmark(d), rec.audio_path), sr=sr, start=t0, end=t1)
        gt = q.ground_truth
        ans = next((str(gt[k]) for k in ("emotion", "direction", "winner", "answer") if k in gt), json.dumps(gt))
        out.append(Listening(d, q.query_id, q.text, ans, round(t0, 2), round(t1, 2), wave, sr))
    return out

