"""``harp bench``: measured speed and memory, written to ``results/bench/<what>.{json,md}``.

Subcommands (goals from ``params.yaml`` ``bench.goals``; docs/performance.md):

* ``extract``   — real-time factor overall and per stage on the benchmark, slowest stage profiled;
* ``long``      — a synthetic multi-hour podcast extracted in a child process: peak RSS, DER
  and speaker-label consistency across the concatenated copies;
* ``retrieval`` — one evidence set with every tool + merge + top-3 over 10^5 / 10^6 synthetic
  clustered segments (the real :func:`harp_lib.agent.tools.retrieve` path), p50/p99, build,
  save and load times, RSS;
* ``baselines`` — our diarization vs one-speaker and MFCC k-means baselines (DER), our retrieval
  vs numpy brute force (agreement, time), Whisper per-segment vs batched (when installed);
* ``scale``     — Dask LocalCluster with 1 vs 2 workers: speed-up and byte-identical outputs;
* ``repro``     — ``dvc repro`` of the mini profile in a separate git worktree, then a no-op repro;
* ``all``       — everything above, then ``summary.md`` (each figure next to its goal).

Every JSON carries the machine description (CPU, cores, memory, versions, load average at
start and end).

>>> machine_info()["nproc"] >= 1
True
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import math
import os
import platform
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

__all__ = ["machine_info", "write_result", "bench_extract", "bench_long", "bench_retrieval",
           "bench_baselines", "bench_scale", "bench_repro", "write_summary", "plot_summary", "synth_long_wav",
           "synthetic_index", "whisper_compare", "main", "WHATS"]

WHATS = ("extract", "long", "retrieval", "baselines", "scale", "repro")
DEFAULT_GOALS = {"extract_rtf": 0.3, "long_rss_gb": 2.0, "retrieval_p50_ms_1e5": 5.0,
                 "retrieval_p99_ms_1e5": 20.0, "retrieval_p50_ms_1e6": 20.0, "repro_min": 15.0,
                 "repro_noop_sec": 10.0}


# =====================================================================================
# machine description and output
# =====================================================================================
def _version(mod: str) -> Optional[str]:
    try:
        from importlib.metadata import version
        return version(mod)
    except Exception:  # noqa: BLE001
        return None


def machine_info() -> dict:
    """CPU model, cores, memory, Python and library versions, load average (1/5/15 min)."""
    cpu = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_gb = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 1024 ** 2, 1)
    commit = None
    with contextlib.suppress(Exception):
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
    return {"nproc": os.cpu_count(), "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "cpu_model": cpu, "mem_total_gb": mem_gb, "gpu": None if not shutil.which("nvidia-smi") else "present",
            "platform": platform.platform(), "python": platform.python_version(),
            "versions": {m: _version(m) for m in ("numpy", "torch", "faiss-cpu", "dask", "distributed",
                                                  "onnxruntime", "pocketsphinx", "harp_lib")},
            "loadavg": [round(x, 2) for x in os.getloadavg()], "git_commit": commit,
            "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _md_machine(m_start: dict, m_end: dict) -> list[str]:
    v = ", ".join(f"{k} {x}" for k, x in m_start["versions"].items() if x)
    return [f"Machine: {m_start['cpu_model']} — {m_start['nproc']} cores "
            f"({m_start['affinity_cpus']} usable), {m_start['mem_total_gb']} GB RAM, GPU: {m_start['gpu'] or 'none'}; "
            f"Python {m_start['python']}; {v}.",
            f"Load average (1/5/15 min) at start {m_start['loadavg']}, at end {m_end['loadavg']} "
            f"(a load near or above {m_start['nproc']} means other jobs shared the cores and inflated wall times).  "
            f"Commit {m_start['git_commit']}, "
            f"{m_start['time_utc']}.", ""]


def write_result(what: str, data: dict, md: Sequence[str], out_dir: Path, m_start: dict) -> Path:
    """Write ``<what>.json`` (data + machine at start/end) and ``<what>.md``; returns the JSON path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    m_end = machine_info()
    payload = {"bench": what, **data, "machine": m_start, "loadavg_end": m_end["loadavg"]}
    jp = out_dir / f"{what}.json"
    jp.write_text(json.dumps(payload, indent=1, sort_keys=False, default=_json_default) + "\n")
    text = [f"# harp bench {what}", ""] + _md_machine(m_start, m_end) + list(md)
    (out_dir / f"{what}.md").write_text("\n".join(text).rstrip() + "\n")
    return jp


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(type(o).__name__)


def _goals(cfg) -> dict:
    g = dict(DEFAULT_GOALS)
    g.update(cfg.bench.goals)
    return g


def _scratch(cfg, args) -> Path:
    p = Path(getattr(args, "scratch", None) or cfg.root / cfg.bench.scratch)
    p.mkdir(parents=True, exist_ok=True)
    return p


def _verdict(value, goal, smaller_is_better: bool = True) -> str:
    if value is None:
        return "not measured"
    ok = value <= goal if smaller_is_better else value >= goal
    return "met" if ok else "MISSED"


def _child_rss_mb() -> float:
    """Peak RSS (MB) of the largest waited-for child so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0


def _self_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _run_child(args: list[str], timeout: Optional[float] = None) -> tuple[dict, float]:
    """Run ``python -m harp_lib.bench <args>`` (prints one JSON line last); returns (json, child max RSS MB).

    Each child is a fresh process, so RUSAGE_CHILDREN's maximum is read from the child's own
    report (``ru_maxrss`` of RUSAGE_SELF inside it) rather than this process' running max.
    """
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, "-m", "harp_lib.bench", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"harp bench child {' '.join(args)} failed (rc {proc.returncode}):\n"
                           f"{proc.stderr[-4000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"harp bench child {' '.join(args)} printed no JSON result:\n{proc.stdout[-2000:]}")
    out = json.loads(lines[-1])
    return out, float(out.get("max_rss_mb", _child_rss_mb()))


# =====================================================================================
# extract
# =====================================================================================
_STAGE_GROUP = {"load": "load", "vad": "vad", "diarization": "diarization", "song_boundaries": "diarization",
                "asr": "asr", "text_emb": "embeddings", "audio_emb": "embeddings", "domain_emb": "embeddings",
                "labels": "labels"}


def _limited_bench(bench_dir: Path, limit: Optional[int], scratch: Path) -> Path:
    """``bench_dir`` itself, or a scratch copy of its manifest with the first ``limit`` recordings."""
    if not limit:
        return bench_dir
    from .schema import Recording, read_jsonl, write_jsonl
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


def bench_extract(cfg, args) -> dict:
    """Extract every domain into scratch (forced), aggregate stage seconds, profile the slowest stage."""
    from .extract.pipeline import extract_domain
    from .extract.quality import evaluate_domain
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
          f"| | seconds | RTF (CPU, one core) |", "|---|---:|---:|"]
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


def _profile_stage(cfg, domains, stage: str, scratch: Path, args) -> Optional[dict]:
    """cProfile one recording's extraction (the domain where ``stage`` costs most) in-process."""
    from .extract.pipeline import extract_domain
    from .schema import Recording, read_jsonl
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


# =====================================================================================
# long
# =====================================================================================
def synth_long_wav(sources: Sequence[tuple[Path, list]], hours: float, out_wav: Path, *,
                   silence_sec: float = 20.0, sr: int = 16000, chunk_sec: float = 60.0) -> dict:
    """Concatenate ``sources`` (wav path, [(start, end, speaker)]) + silence, cyclically, until
    ``hours``; written chunk by chunk (memory: one chunk).  Returns the reference turns.

    The writer is a ``soundfile.SoundFile`` in append mode: ``harp_lib.audio.write`` takes a
    whole array, which is exactly what a 4-hour file must avoid.
    """
    import soundfile as sf
    from . import audio
    target = int(hours * 3600 * sr)
    out_wav = Path(out_wav)
    out_wav.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_wav.with_name(out_wav.name + ".part")
    ref, pieces, pos, copy = [], [], 0, 0
    with sf.SoundFile(str(tmp), "w", samplerate=sr, channels=1, subtype="PCM_16", format="WAV") as fh:
        while pos < target:
            for path, turns in sources:
                if pos >= target:
                    break
                off = pos / sr
                n_written = 0
                for span, w in audio.iter_windows(path, chunk_sec, sr=sr):
                    w = w[: max(0, target - pos)]
                    fh.write(w)
                    pos += len(w)
                    n_written += len(w)
                    if pos >= target:
                        break
                dur = n_written / sr
                ref += [(round(off + a, 3), round(off + min(b, dur), 3), spk) for a, b, spk in turns if a < dur]
                pieces.append({"source": Path(path).stem, "copy": copy, "start": round(off, 3), "end": round(off + dur, 3)})
                gap = min(int(silence_sec * sr), max(0, target - pos))
                rng = np.random.default_rng(len(pieces))
                for a in range(0, gap, int(chunk_sec * sr)):
                    n = min(int(chunk_sec * sr), gap - a)
                    fh.write((rng.standard_normal(n) * 10 ** (-62 / 20)).astype(np.float32))  # noise floor, as synth
                pos += gap
            copy += 1
    os.replace(tmp, out_wav)
    return {"duration": round(pos / sr, 3), "reference": ref, "pieces": pieces}


def _long_child(args) -> dict:
    """In a fresh process: extract the one long recording, report timings and own peak RSS."""
    from .config import load_config
    from .extract.pipeline import extract_domain
    cfg = load_config(profile=args.profile)
    # always the streaming path, also for shortened runs below scale.stream_above_sec
    cfg.data.setdefault("scale", {})["stream_above_sec"] = 0.0
    t0 = time.perf_counter()
    rep = extract_domain(cfg, "emotion", force=True, workers=1, bench_dir=Path(args.bench_dir),
                         out_dir=Path(args.out_dir), progress=False)
    return {"wall_sec": round(time.perf_counter() - t0, 3), "stage_sec": rep["stage_sec"],
            "rtf": rep["rtf"], "max_rss_mb": round(_self_rss_mb(), 1)}


def bench_long(cfg, args) -> dict:
    """Synthesize an ``hours``-long podcast and extract it in a child process with streaming."""
    from .extract.quality import der
    from .schema import Recording, Segment, read_jsonl, write_jsonl
    hours = float(args.hours or cfg.bench.long_hours)
    scratch = _scratch(cfg, args) / "long"
    bench_src = cfg.path("paths.benchmark") / "emotion"
    recs = sorted(read_jsonl(bench_src / "recordings.jsonl", Recording), key=lambda r: r.id)
    gt = read_jsonl(bench_src / "segments.jsonl", Segment)
    sources = []
    for r in recs:
        turns = [(s.start, s.end, s.speaker) for s in gt if s.recording_id == r.id and s.speaker and s.text.strip()]
        sources.append((bench_src / r.audio_path, turns))
    bench_dir = scratch / f"bench_{hours:g}h"
    wav = bench_dir / "recordings" / "long_podcast.wav"
    t0 = time.perf_counter()
    info = synth_long_wav(sources, hours, wav, silence_sec=float(cfg.bench.long_silence_sec))
    gen_sec = time.perf_counter() - t0
    gen_rss = _self_rss_mb()
    write_jsonl(bench_dir / "recordings.jsonl",
                [Recording(id="long_podcast", domain="emotion", audio_path="recordings/long_podcast.wav",
                           duration=info["duration"], sample_rate=16000)])
    out_dir = scratch / f"extract_{hours:g}h"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    child_args = ["_long_child", "--bench-dir", str(bench_dir), "--out-dir", str(out_dir)]
    if args.profile:
        child_args += ["--profile", args.profile]
    t1 = time.perf_counter()
    child, _ = _run_child(child_args)
    wall = time.perf_counter() - t1
    children_max = _child_rss_mb()
    peak_mb = max(child["max_rss_mb"], children_max)
    whole_file_mb = info["duration"] * 16000 * 4 / 2 ** 20
    # speaker consistency: the same voices recur in every copy, so one global DER over the
    # concatenation penalises any label that changes meaning between chunks
    raw = json.loads((out_dir / "stage1" / "long_podcast" / "turns.json").read_text())["raw"]
    hyp = [(t["start"], t["end"], t["speaker"]) for t in raw]
    collar = float(cfg.extract.metrics.der_collar)
    d_all = der(info["reference"], hyp, collar)
    # per piece: majority hypothesis label of each reference speaker
    cons = _label_consistency(info["reference"], hyp, info["pieces"])
    rss_goal = _goals(cfg)["long_rss_gb"]
    res = {"hours": hours, "audio_sec": info["duration"], "generate_sec": round(gen_sec, 2),
           "generate_rss_mb": round(gen_rss, 1), "wall_sec": round(wall, 1), "child": child,
           "peak_rss_mb": round(peak_mb, 1), "peak_rss_gb": round(peak_mb / 1024, 3),
           "whole_file_float32_mb": round(whole_file_mb, 1), "goal_rss_gb": rss_goal,
           "verdict": _verdict(peak_mb / 1024, rss_goal), "der": d_all, "consistency": cons,
           "n_pieces": len(info["pieces"]), "rtf_wall": round(wall / info["duration"], 4),
           "stream_above_sec": 0.0,
           "command": f"harp bench long --hours {hours:g}"}
    md = [f"A {hours:g} h podcast ({info['duration'] / 3600:.2f} h: {len(info['pieces'])} copies of the "
          f"{len(sources)} benchmark podcasts with {cfg.bench.long_silence_sec} s of room noise "
          f"between them), generated chunk by chunk in {gen_sec:.0f} s (generator peak RSS {gen_rss:.0f} MB), "
          f"extracted in a child process (streamed: `scale.stream_above_sec` = {res['stream_above_sec']}).", "",
          "| figure | value | goal |", "|---|---:|---|",
          f"| peak RSS of the extraction process | {peak_mb:.0f} MB ({peak_mb / 1024:.2f} GB) | ≤ {rss_goal} GB: {res['verdict']} |",
          f"| the whole file as float32 would be | {whole_file_mb:.0f} MB | (never loaded) |",
          f"| wall time | {wall:.0f} s (RTF {res['rtf_wall']:.3f}) | |",
          f"| DER over the whole concatenation (collar {collar}) | {d_all['der']:.3f} "
          f"(confusion {d_all['confusion']:.3f}) | labels must keep their meaning across chunks |",
          f"| speaker-label consistency | {cons['consistent_fraction']:.3f} of (speaker, copy) pairs map to the "
          f"speaker's global label | 1.0 |", "",
          "Stage seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(child["stage_sec"].items())) + ".", ""]
    if hours < 4:
        md += [f"**Shortened run** ({hours:g} h instead of 4 h, to fit the session).  Memory does not grow "
               f"with length beyond per-window d-vectors (4 KB/s: {4 * 3600 * 4 * 256 * 4 / 2 ** 20:.0f} MB for 4 h) and "
               f"per-turn records, so the 4 h peak is extrapolated as ≈ {peak_mb + (4 - hours) * 3600 * 4 * 256 * 4 * 2 / 2 ** 20:.0f} MB "
               f"(×2 margin on the d-vectors; an extrapolation, not a measurement).  4 h wall time extrapolates linearly to "
               f"≈ {wall * 4 / hours / 3600:.1f} h.  Full run: `harp bench long --hours 4`.", ""]
        res["extrapolated_4h_rss_mb"] = round(peak_mb + (4 - hours) * 3600 * 4 * 256 * 4 * 2 / 2 ** 20, 1)
        res["extrapolated_4h_wall_h"] = round(wall * 4 / hours / 3600, 2)
    return res | {"_md": md}


def _label_consistency(ref, hyp, pieces) -> dict:
    """For each (reference speaker, piece): the hypothesis label with most overlap; consistent
    when it equals the speaker's label with most overlap over the whole file."""
    def overlap_table(lo, hi):
        tab: dict[str, dict[str, float]] = {}
        hs = sorted(h for h in hyp if h[1] > lo and h[0] < hi)
        for a, b, spk in ref:
            if b <= lo or a >= hi:
                continue
            for c, d, lab in hs:
                if d <= a:
                    continue
                if c >= b:
                    break
                ov = min(b, d) - max(a, c)
                if ov > 0:
                    tab.setdefault(spk, {}).setdefault(lab, 0.0)
                    tab[spk][lab] += ov
        return tab
    glob = overlap_table(-1, math.inf)
    gl = {s: max(t, key=t.get) for s, t in glob.items()}
    ok = n = 0
    per = []
    for p in pieces:
        tab = overlap_table(p["start"], p["end"])
        for s, t in sorted(tab.items()):
            n += 1
            lab = max(t, key=t.get)
            ok += lab == gl.get(s)
            per.append({"piece": f"{p['source']}#{p['copy']}", "speaker": s, "label": lab})
    return {"global_label": gl, "consistent_fraction": round(ok / n, 4) if n else None, "pairs": n,
            "distinct_labels_per_speaker": {s: len({x["label"] for x in per if x["speaker"] == s}) for s in gl}}


# =====================================================================================
# retrieval
# =====================================================================================
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
    from .index import SegmentIndex
    from .labels import EMOTIONS
    from .schema import Segment
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
    from .labels import EMOTIONS
    from .schema import Plan, PlanSet, Recording
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


def _retrieval_child(args) -> dict:
    """One index size in a fresh process: generate, build, save, load, time queries, RSS."""
    from .agent.context import agent_params
    from .agent.tools import retrieve
    from .config import load_config
    from .index import SegmentIndex
    cfg = load_config(profile=args.profile)
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


def bench_retrieval(cfg, args) -> dict:
    sizes = [int(x) for x in (args.sizes or cfg.bench.retrieval_sizes)]
    nq = int(args.queries or cfg.bench.retrieval_queries)
    scratch = _scratch(cfg, args) / "retrieval"
    scratch.mkdir(parents=True, exist_ok=True)
    g = _goals(cfg)
    rows = []
    for n in sizes:
        ca = ["_retrieval_child", "--n", str(n), "--queries", str(nq), "--out-dir", str(scratch)]
        if args.profile:
            ca += ["--profile", args.profile]
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


# =====================================================================================
# baselines
# =====================================================================================
def _mfcc_kmeans_turns(wav: Path, speech, k: int, step: float = 1.0, seed: int = 0):
    """Naive diarization: MFCC mean+std of 1 s windows inside speech, k-means with fixed k."""
    import librosa
    from sklearn.cluster import KMeans
    from . import audio
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


def _baseline_diarization(cfg, args, scratch: Path) -> dict:
    from .extract.pipeline import extract_domain
    from .extract.quality import der
    from .schema import Recording, Segment, read_jsonl
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


def _baseline_retrieval(cfg, args) -> dict:
    """Our retrieve() vs numpy brute force over every row, same queries, at 10^5 segments."""
    from .agent.context import agent_params
    from .agent.tools import retrieve
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
                          int(params["vector_hits"]), int(params["keyword_hits"]), int(params["top_k"]))
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
    import torch
    from .extract.quality import wer
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


def _baseline_whisper(cfg, args) -> dict:
    """Whisper per segment vs batched on benchmark turns, with the paper's checkpoint when the
    local Hugging Face cache has it (``bench.whisper_model``); otherwise skipped with the reason."""
    from .config import BackendError
    from .extract.paper import _device, hf_load
    from .schema import Recording, Segment, read_jsonl
    model_id = str(cfg.bench.whisper_model)
    try:
        import torch
        from transformers import WhisperForConditionalGeneration, WhisperProcessor
        proc = hf_load(f"Whisper {model_id}", WhisperProcessor.from_pretrained, model_id)
        model = hf_load(f"Whisper {model_id}", WhisperForConditionalGeneration.from_pretrained, model_id)
    except (BackendError, ImportError) as e:
        return {"model": model_id, "skipped": f"{model_id} is not available here ({' '.join(str(e).split())[:300]})"}
    dev = _device(torch)
    model = model.to(dev, torch.float16 if dev == "cuda" else torch.float32).eval()
    from . import audio
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


def bench_baselines(cfg, args) -> dict:
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


# =====================================================================================
# scale
# =====================================================================================
def bench_scale(cfg, args) -> dict:
    """Dask LocalCluster, 1 vs 2 workers, same recordings: wall, speed-up, identical outputs."""
    from . import scale
    d = (args.domain or ["clinical"])[0]
    scratch = _scratch(cfg, args) / "scale"
    bench_dir = _limited_bench(cfg.path("paths.benchmark") / d, args.limit or 8, scratch)
    runs = {}
    outs = {}
    for w in (1, 2):
        out = scratch / f"{d}_w{w}"
        if out.exists():
            shutil.rmtree(out)
        client = scale.dask_client(w)
        try:
            client.run(lambda: None)                 # workers up before timing
            rep = scale.extract_domain_scaled(cfg, d, engine="dask", workers=w, client=client, force=True,
                                              bench_dir=bench_dir, out_dir=out, progress=not args.quiet)
        finally:
            cl = client.cluster
            client.close()
            cl.close()
        runs[w] = {k: rep[k] for k in ("n_recordings", "audio_sec", "wall_sec", "rtf_wall", "rtf_total_cpu")}
        outs[w] = out
    diffs = scale.compare_outputs(outs[1], outs[2])
    sp = round(runs[1]["wall_sec"] / max(runs[2]["wall_sec"], 1e-9), 3)
    res = {"domain": d, "runs": {str(k): v for k, v in runs.items()}, "speedup_2_vs_1": sp,
           "identical_outputs": not diffs, "differences": diffs[:20]}
    md = [f"Dask distributed LocalCluster (one thread per worker), domain {d}, {runs[1]['n_recordings']} recordings "
          f"({runs[1]['audio_sec']:.0f} s of audio), forced extraction.", "",
          "| workers | wall s | RTF wall |", "|---:|---:|---:|"]
    md += [f"| {w} | {r['wall_sec']:.1f} | {r['rtf_wall']:.3f} |" for w, r in runs.items()]
    md += ["", f"Speed-up with 2 workers: **{sp:.2f}×** (on {os.cpu_count()} cores; other load: see the load average above).  "
           f"Outputs (segments/*.jsonl, vectors/*.npy) byte-identical with 1 and 2 workers: **{not diffs}**"
           + (f" — differences: {', '.join(diffs[:5])}" if diffs else "") + "."]
    return res | {"_md": md}


# =====================================================================================
# repro
# =====================================================================================
def bench_repro(cfg, args) -> dict:
    """``dvc repro`` of the mini profile in a fresh git worktree (never the main checkout's data/)."""
    root = Path(cfg.root)
    wt = Path(args.worktree or "/tmp/harp_repro")
    if wt.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(wt)], cwd=root, capture_output=True)
        shutil.rmtree(wt, ignore_errors=True)
    subprocess.run(["git", "worktree", "add", "--detach", str(wt), "HEAD"], cwd=root, check=True, capture_output=True)
    venv = root / ".venv"
    if not (wt / ".venv").exists():
        os.symlink(venv, wt / ".venv")
    (wt / ".cache").mkdir(exist_ok=True)
    # rendered-TTS cache only (keyed by sha256 of the inputs): the benchmark is still built from raw audio
    synth_cache = root / ".cache" / "harp" / "synth"
    (wt / ".cache" / "harp").mkdir(parents=True, exist_ok=True)
    for sub in ("synth", "scratch", "pyannote_sample"):
        if (root / ".cache" / "harp" / sub).exists() and not (wt / ".cache" / "harp" / sub).exists():
            os.symlink(root / ".cache" / "harp" / sub, wt / ".cache" / "harp" / sub)
    for p in ("dvc.lock",):
        with contextlib.suppress(FileNotFoundError):
            (wt / p).unlink()
    env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ.get('PATH', '')}", HARP_PYTHON=str(venv / "bin" / "python"),
               HF_HUB_OFFLINE="1")
    dvc = str(venv / "bin" / "dvc")
    subprocess.run([dvc, "config", "--local", "core.autostage", "false"], cwd=wt, env=env, capture_output=True)
    timeout = float(args.repro_timeout or 3600)
    t0 = time.perf_counter()
    p = subprocess.run([dvc, "repro"], cwd=wt, env=env, capture_output=True, text=True, timeout=timeout)
    full = time.perf_counter() - t0
    log_full = (p.stdout + p.stderr)[-3000:]
    ok_full = p.returncode == 0
    t0 = time.perf_counter()
    q = subprocess.run([dvc, "repro"], cwd=wt, env=env, capture_output=True, text=True, timeout=600)
    noop = time.perf_counter() - t0
    g = _goals(cfg)
    stages = [ln for ln in q.stdout.splitlines() if "didn't change" in ln or "Running stage" in ln]
    res = {"worktree": str(wt), "full_sec": round(full, 1), "full_min": round(full / 60, 2), "full_ok": ok_full,
           "noop_sec": round(noop, 2), "noop_ok": q.returncode == 0,
           "noop_reran": [ln for ln in stages if "Running stage" in ln],
           "goal_min": g["repro_min"], "goal_noop_sec": g["repro_noop_sec"],
           "verdict_full": _verdict(full / 60, g["repro_min"]) if ok_full else "FAILED",
           "verdict_noop": _verdict(noop, g["repro_noop_sec"]) if q.returncode == 0 else "FAILED",
           "log_tail": log_full if not ok_full else log_full[-800:]}
    md = [f"`dvc repro` of the mini profile from raw audio in a fresh `git worktree` ({wt}, HEAD; .venv and the "
          f"rendered-TTS cache linked, no dvc.lock, no data/).", "",
          "| run | wall | goal | |", "|---|---:|---:|---|",
          f"| full repro | {full / 60:.1f} min | ≤ {g['repro_min']} min | {res['verdict_full']} |",
          f"| no-op repro | {noop:.1f} s | ≤ {g['repro_noop_sec']} s | {res['verdict_noop']} |"]
    if not ok_full:
        md += ["", "Full repro failed; last lines:", "", "```", log_full[-1500:], "```"]
    if res["noop_reran"]:
        md += ["", "The no-op repro re-ran: " + "; ".join(res["noop_reran"])]
    if not args.keep_worktree:
        subprocess.run(["git", "worktree", "remove", "--force", str(wt)], cwd=root, capture_output=True)
    return res | {"_md": md}


# =====================================================================================
# summary
# =====================================================================================
def write_summary(out_dir: Path) -> Path:
    """``summary.md``: every measured figure next to its goal, from the JSON files present."""
    out_dir = Path(out_dir)
    J = {}
    for w in WHATS:
        p = out_dir / f"{w}.json"
        if p.exists():
            J[w] = json.loads(p.read_text())
    rows = []
    e = J.get("extract")
    if e:
        rows.append(("Extraction RTF, wall (mini, %d workers)" % e["workers"], f"{e['rtf_wall']:.3f}", f"≤ {e['goal_rtf']}", e["verdict_wall"]))
        rows.append(("Extraction RTF, CPU (sum of stages, one core)", f"{e['rtf_cpu']:.3f}", f"≤ {e['goal_rtf']}", e["verdict_cpu"]))
        rows.append(("  per stage (CPU RTF)", ", ".join(f"{k} {v:.3f}" for k, v in e["rtf_stage_cpu"].items()), "reported", ""))
        rows.append(("  slowest stage", e["slowest_stage"], "profiled", ""))
    lg = J.get("long")
    if lg:
        rows.append((f"Long recording ({lg['hours']:g} h) peak RSS", f"{lg['peak_rss_gb']:.2f} GB", f"≤ {lg['goal_rss_gb']} GB", lg["verdict"]))
        if "extrapolated_4h_rss_mb" in lg:
            rows.append(("  4 h peak RSS (extrapolated, not measured)", f"{lg['extrapolated_4h_rss_mb'] / 1024:.2f} GB", f"≤ {lg['goal_rss_gb']} GB",
                         _verdict(lg["extrapolated_4h_rss_mb"] / 1024, lg["goal_rss_gb"])))
        rows.append(("  DER over the concatenation / label consistency", f"{lg['der']['der']:.3f} / {lg['consistency']['consistent_fraction']}", "consistent labels", ""))
    r = J.get("retrieval")
    if r:
        for s in r["sizes"]:
            tag = {100_000: "1e5", 1_000_000: "1e6"}.get(s["n"])
            g50 = r["goals"].get(f"retrieval_p50_ms_{tag}") if tag else None
            g99 = r["goals"].get(f"retrieval_p99_ms_{tag}") if tag else None
            rows.append((f"Retrieval p50 at {s['n']:,} segments", f"{s['p50_ms']} ms", f"≤ {g50} ms" if g50 else "-",
                         _verdict(s["p50_ms"], g50) if g50 else ""))
            rows.append((f"Retrieval p99 at {s['n']:,} segments", f"{s['p99_ms']} ms", f"≤ {g99} ms" if g99 else "reported",
                         _verdict(s["p99_ms"], g99) if g99 else ""))
            rows.append((f"  index build / save / load at {s['n']:,}", f"{s['build_sec']} / {s['save_sec']} / {s['load_sec']} s; peak RSS {s['max_rss_mb']:.0f} MB", "reported", ""))
    b = J.get("baselines")
    if b:
        for d, x in b["diarization"].items():
            rows.append((f"Diarization DER {d}: ours / one speaker / MFCC k-means",
                         f"{x['ours']['der']:.3f} / {x['one_speaker']['der']:.3f} / {x['mfcc_kmeans']['der']:.3f}", "ours lowest",
                         "met" if x["ours"]["der"] <= min(x["one_speaker"]["der"], x["mfcc_kmeans"]["der"]) else "MISSED"))
        rr = b["retrieval"]
        rows.append(("Retrieval vs numpy brute force (p50 ms, identical top-3)",
                     f"{rr['ours_p50_ms']} vs {rr['brute_force_p50_ms']} ms, {rr['agreement']:.1%}", "same results", "met" if rr["agreement"] == 1 else "MISSED"))
        wh = b["whisper"]
        if "skipped" in wh:
            rows.append(("Whisper per-segment vs batched", "skipped: checkpoint not in the local cache",
                         "when the paper checkpoint is present", ""))
        else:
            rows.append(("Whisper per-segment vs batched (s, speed-up)",
                         f"{wh['per_segment_sec']} vs {wh['batched_sec']} s, {wh['speedup']:.2f}×", "reported", ""))
    s = J.get("scale")
    if s:
        rows.append(("Dask 2 workers vs 1: speed-up", f"{s['speedup_2_vs_1']:.2f}×", "> 1", "met" if s["speedup_2_vs_1"] > 1 else "MISSED"))
        rows.append(("  identical outputs with 1 and 2 workers", str(s["identical_outputs"]), "True", "met" if s["identical_outputs"] else "MISSED"))
    rp = J.get("repro")
    if rp:
        rows.append(("`dvc repro` mini from raw audio", f"{rp['full_min']:.1f} min", f"≤ {rp['goal_min']} min", rp["verdict_full"]))
        rows.append(("no-op `dvc repro`", f"{rp['noop_sec']:.1f} s", f"≤ {rp['goal_noop_sec']} s", rp["verdict_noop"]))
    m = next(iter(J.values()))["machine"] if J else machine_info()
    lines = ["# Performance summary (harp bench)", "",
             f"Machine: {m['cpu_model']}, {m['nproc']} cores, {m['mem_total_gb']} GB, no GPU; details and load "
             f"averages in each `<bench>.md`.  Missing benches: {', '.join(w for w in WHATS if w not in J) or 'none'}.", "",
             "| figure | measured | goal | verdict |", "|---|---|---|---|"]
    lines += [f"| {a} | {b_} | {c} | {d} |" for a, b_, c, d in rows]
    png = plot_summary(out_dir, J)
    if png is not None:
        lines += ["", f"![bench summary]({png.name})"]
    p = out_dir / "summary.md"
    p.write_text("\n".join(lines) + "\n")
    return p


def plot_summary(out_dir: Path, J: dict) -> Optional[Path]:
    """``summary.png`` in ``out_dir`` from the bench results ``J`` (what :func:`write_summary`
    read): extraction CPU RTF per stage and domain (stacked, with the goal) and the retrieval
    latency CDF per index size (with the p50/p99 goals).  None when neither bench ran."""
    out_dir = Path(out_dir)
    e, r = J.get("extract"), J.get("retrieval")
    if not (e or {}).get("domains") and not r:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    ax = axes[0]
    doms = list((e or {}).get("domains") or {})
    if doms:
        groups = ("vad", "diarization", "asr", "embeddings", "labels")
        left = np.zeros(len(doms))
        for g in groups:
            vals = np.array([sum(v for k, v in e["domains"][d].get("rtf", {}).items() if _STAGE_GROUP.get(k, k) == g)
                             for d in doms])
            ax.barh(doms, vals, left=left, label=g)
            left += vals
        ax.axvline(e["goal_rtf"], color="k", ls="--", lw=1)
        ax.text(e["goal_rtf"], len(doms) - 0.6, f"goal ≤ {e['goal_rtf']} ", ha="right", va="bottom", fontsize=8)
        ax.set_xlabel("CPU seconds per second of audio (one core)")
        ax.set_title(f"Extraction RTF per stage (wall RTF {e['rtf_wall']:.3f} with {e['workers']} workers)", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    else:
        ax.set_axis_off()
    ax = axes[1]
    if r:
        for row in r["sizes"]:
            if row.get("cdf_ms"):
                ax.plot(row["cdf_ms"], np.arange(101), label=f"{row['n']:,} segments")
        g = r.get("goals", {})
        for key, q in (("retrieval_p50_ms_1e5", 50), ("retrieval_p99_ms_1e5", 99)):
            if key in g:
                ax.plot([g[key]], [q], "kx")
                ax.annotate(f"goal p{q} ≤ {g[key]} ms (1e5)", (g[key], q), fontsize=7, xytext=(-4, -10),
                            textcoords="offset points", ha="right")
        ax.set_xscale("log")
        ax.set_xlabel("latency of one evidence set, ms (log)")
        ax.set_ylabel("percentile")
        ax.set_title("Retrieval: all tools + merge + top-3", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(alpha=0.3)
    else:
        ax.set_axis_off()
    fig.tight_layout()
    p = out_dir / "summary.png"
    fig.savefig(p, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return p


# =====================================================================================
# CLI
# =====================================================================================
_FUNCS = {"extract": bench_extract, "long": bench_long, "retrieval": bench_retrieval,
          "baselines": bench_baselines, "scale": bench_scale, "repro": bench_repro}


def run_one(what: str, cfg, args) -> Path:
    """Run one bench and write its JSON/Markdown; returns the JSON path."""
    m0 = machine_info()
    t0 = time.perf_counter()
    res = _FUNCS[what](cfg, args)
    md = res.pop("_md")
    res["bench_wall_sec"] = round(time.perf_counter() - t0, 1)
    out = Path(args.out or cfg.root / "results" / "bench")
    p = write_result(what, res, md, out, m0)
    write_summary(out)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``harp bench {extract,long,retrieval,baselines,scale,repro,all,summary} [options]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("_long_child", "_retrieval_child"):
        ap = argparse.ArgumentParser(prog=f"harp bench {argv[0]}")
        ap.add_argument("--bench-dir")
        ap.add_argument("--out-dir")
        ap.add_argument("--n")
        ap.add_argument("--queries", default="2000")
        ap.add_argument("--profile")
        a = ap.parse_args(argv[1:])
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        res = _long_child(a) if argv[0] == "_long_child" else _retrieval_child(a)
        print(json.dumps(res, default=_json_default))
        return 0
    ap = argparse.ArgumentParser(prog="harp bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=(*WHATS, "all", "summary"))
    ap.add_argument("--profile", help="params.yaml profile (default: its `profile` key)")
    ap.add_argument("--out", help="output folder (default results/bench)")
    ap.add_argument("--scratch", help="scratch folder (default bench.scratch)")
    ap.add_argument("--domain", action="append", help="extract/scale: domain(s) (default: params domains / clinical)")
    ap.add_argument("--limit", type=int, help="extract/baselines/scale: first N recordings per domain")
    ap.add_argument("--workers", type=int, help="extract: worker processes (default extract.workers)")
    ap.add_argument("--no-profile", action="store_true", help="extract: skip the cProfile run")
    ap.add_argument("--hours", type=float, help="long: length of the synthetic recording (default bench.long_hours)")
    ap.add_argument("--sizes", type=int, nargs="+", help="retrieval: index sizes (default bench.retrieval_sizes)")
    ap.add_argument("--queries", type=int, help="retrieval: timed queries per size")
    ap.add_argument("--baseline-n", type=int, help="baselines: segments in the retrieval comparison (default 1e5)")
    ap.add_argument("--baseline-queries", type=int, help="baselines: retrieval queries compared (default 300)")
    ap.add_argument("--whisper-segments", type=int, help="baselines: turns in the Whisper comparison (default 32)")
    ap.add_argument("--worktree", help="repro: worktree path (default /tmp/harp_repro)")
    ap.add_argument("--keep-worktree", action="store_true")
    ap.add_argument("--repro-timeout", type=float, help="repro: seconds before the full repro is abandoned")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from .config import load_config
    cfg = load_config(profile=a.profile)
    out = Path(a.out or cfg.root / "results" / "bench")
    if a.what == "summary":
        print(write_summary(out))
        return 0
    whats = WHATS if a.what == "all" else (a.what,)
    for w in whats:
        p = run_one(w, cfg, a)
        print(f"harp bench {w}: wrote {p} and {p.with_suffix('.md')}")
    print(f"summary: {out / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
