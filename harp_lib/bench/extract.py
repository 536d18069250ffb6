"""``harp bench extract``: real-time factor overall and per stage, slowest stage profiled."""
from __future__ import annotations

import contextlib
import cProfile
import io
import json
import os
import pstats
import shutil
from pathlib import Path
from typing import Optional

from harp_lib.config import Config
from harp_lib.bench.common import _goals, _scratch, _verdict
from harp_lib.bench.options import BenchOptions
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.schema import Recording
from harp_lib.extract.pipeline import extract_domain
from harp_lib.extract.quality import evaluate_domain


_STAGE_GROUP = {"load": "load", "vad": "vad", "diarization": "diarization", "song_boundaries": "diarization",
                "asr": "asr", "text_emb": "embeddings", "audio_emb": "embeddings", "domain_emb": "embeddings",
                "labels": "labels"}


def _limited_bench(bench_dir: Path, limit: Optional[int], scratch: Path) -> Path:
    """``bench_dir`` itself, or a scratch copy of its manifest with the first ``limit`` recordings."""
    if not limit:
        return bench_dir
    recs = sorted(read_jsonl(bench_dir / "recordings.jsonl", Recording), key=lambda r: r.id)[:limit]
    d = scratch / f"bench_{bench_dir.name}_{limit}"
    d.mkdir(parents=True, exist_ok=True)
    for r in recs:
        src = (bench_dir / r.audio_path).resolve()
        dst = d / r.audio_path
        dst.parent.mkdir(parents=True, exist_ok=True)
        if not dst.exists():                      # a hard link (resolve_under refuses symlinks out of the folder)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy(src, dst)
    write_jsonl(d / "recordings.jsonl", recs)
    if (bench_dir / "segments.jsonl").exists():
        shutil.copy(bench_dir / "segments.jsonl", d / "segments.jsonl")
    return d


def bench_extract(cfg: Config, args: BenchOptions) -> dict:
    """Extract every domain into scratch (forced), aggregate stage seconds, profile the slowest stage."""
    scratch = _scratch(cfg, args) / "extract"
    workers = int(args.workers or cfg.extract.workers)
    domains = args.domain or list(cfg.domains)
    per_domain, stages, audio_sec, wall = {}, {}, 0.0, 0.0
    for d in domains:
        bench_dir = _limited_bench(cfg.path("paths.benchmark") / d, args.limit, scratch)
        out_dir = scratch / d
        rep = extract_domain(cfg, d, force=True, workers=workers, bench_dir=bench_dir, out_dir=out_dir,
                             progress=not args.quiet)
        q = {}
        with contextlib.suppress(Exception):
            m = evaluate_domain(cfg, d, run_report=rep, bench_dir=bench_dir, out_dir=out_dir,
                                metrics_path=scratch / f"metrics_{d}.json")
            if m:
                q = {k: m[k] for k in ("der", "wer", "vad_f1", "emotion_accuracy", "cough_f1", "boundary_f1")
                     if k in m}
        per_domain[d] = {k: rep[k] for k in ("n_recordings", "audio_sec", "wall_sec", "stage_sec", "rtf",
                                             "rtf_total_cpu", "rtf_wall")} | {"quality": q,
                                                                           "n_quarantined": rep.get("n_quarantined", 0)}
        audio_sec += rep["audio_sec"]
        wall += rep["wall_sec"]
        for k, v in rep["stage_sec"].items():
            g = _STAGE_GROUP.get(k, k)
            stages[g] = round(stages.get(g, 0.0) + v, 3)
    audio_sec = audio_sec or 1e-9
    rtf_stage = {k: round(v / audio_sec, 4) for k, v in sorted(stages.items())}
    compute = {k: v for k, v in stages.items() if k != "load"}
    slowest = max(compute, key=compute.get) if compute else None
    prof = _profile_stage(cfg, domains, slowest, scratch, args) if slowest and not args.no_profile else None
    goal = _goals(cfg)["extract_rtf"]
    res = {"domains": per_domain, "audio_sec": round(audio_sec, 3), "wall_sec": round(wall, 3),
           "workers": workers, "stage_sec": stages, "rtf_stage_cpu": rtf_stage,
           "rtf_cpu": round(sum(stages.values()) / audio_sec, 4), "rtf_wall": round(wall / audio_sec, 4),
           "slowest_stage": slowest, "profile": prof, "goal_rtf": goal,
           "verdict_wall": _verdict(round(wall / audio_sec, 4), goal),
           "verdict_cpu": _verdict(round(sum(stages.values()) / audio_sec, 4), goal),
           "limit": args.limit}
    md = [f"Benchmark: {', '.join(domains)} ({audio_sec / 60:.1f} min of audio{', first ' + str(args.limit) + ' recordings each' if args.limit else ''}), "
          f"`extract.workers` = {workers}, forced re-extraction into {scratch}.", "",
          "| | seconds | RTF (CPU, one core) |", "|---|---:|---:|"]
    md += [f"| {k} | {stages[k]:.1f} | {rtf_stage[k]:.3f} |" for k in sorted(stages)]
    md += [f"| **all stages** | {sum(stages.values()):.1f} | **{res['rtf_cpu']:.3f}** |", "",
           f"Wall time {wall:.1f} s for {audio_sec:.0f} s of audio: **RTF {res['rtf_wall']:.3f}** with {workers} "
           f"worker(s) (goal ≤ {goal}: {res['verdict_wall']}); CPU RTF {res['rtf_cpu']:.3f} ({res['verdict_cpu']}).", "",
           "| domain | audio s | wall s | RTF wall | RTF CPU | quality |", "|---|---:|---:|---:|---:|---|"]
    md += [f"| {d} | {r['audio_sec']:.0f} | {r['wall_sec']:.1f} | {r['rtf_wall']:.3f} | {r['rtf_total_cpu']:.3f} | "
           f"{', '.join(f'{k}={v}' for k, v in r['quality'].items()) or '-'} |" for d, r in per_domain.items()]
    if prof:
        md += ["", f"Slowest stage: **{slowest}**; cProfile of one recording ({prof['recording']}, "
               f"{prof['audio_sec']:.0f} s) — top functions by own time:", "", "```", prof["text"], "```"]
    return res | {"_md": md}


def _profile_stage(cfg: Config, domains, stage: str, scratch: Path, args: BenchOptions) -> Optional[dict]:
    """cProfile one recording's extraction (the domain where ``stage`` costs most) in-process."""
    dom = None
    best = -1.0
    for d in domains:
        p = scratch / d / "stage1"
        tot = 0.0
        for t in sorted(p.glob("*/timing.json")):
            tot += sum(v for k, v in json.loads(t.read_text()).items() if _STAGE_GROUP.get(k, k) == stage)
        for t in sorted(p.glob("*/stage2.json")):
            tot += sum(v for k, v in json.loads(t.read_text()).get("timing", {}).items()
                       if _STAGE_GROUP.get(k, k) == stage)
        if tot > best:
            best, dom = tot, d
    bench_dir = _limited_bench(cfg.path("paths.benchmark") / dom, args.limit, scratch)
    recs = sorted(read_jsonl(bench_dir / "recordings.jsonl", Recording), key=lambda r: (r.duration, r.id))
    rec = recs[len(recs) // 2]           # a median-length recording
    out_dir = scratch / "profile" / dom
    prof = cProfile.Profile()
    prof.enable()
    extract_domain(cfg, dom, recordings=[rec.id], force=True, workers=1, bench_dir=bench_dir,
                   out_dir=out_dir, progress=False)
    prof.disable()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("tottime")
    st.print_stats(int(cfg.bench.profile_top))
    lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    top = []
    for (fn, line, name), (cc, nc, tt, ct, _) in sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:int(cfg.bench.profile_top)]:
        top.append({"function": f"{fn}:{line}({name})", "calls": nc, "tottime": round(tt, 3), "cumtime": round(ct, 3)})
    return {"stage": stage, "domain": dom, "recording": rec.id, "audio_sec": rec.duration,
            "top": top, "text": "\n".join(lines[start:])}
