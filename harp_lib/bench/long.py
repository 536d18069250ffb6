"""``harp bench long``: a synthetic multi-hour podcast extracted in a child process (peak RSS, DER)."""
from __future__ import annotations

import json
import math
import os
import shutil
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from harp_lib.core import audio
from harp_lib.core.atomic import part_path
from harp_lib.config import Config
from harp_lib.bench.common import _child_rss_mb, _goals, _run_child, _scratch, _self_rss_mb, _verdict
from harp_lib.bench.options import BenchOptions
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.schema import Recording, Segment
from harp_lib.extract.pipeline import extract_domain
from harp_lib.extract.quality import der


def synth_long_wav(sources: Sequence[tuple[Path, list]], hours: float, out_wav: Path, *,
                   silence_sec: float = 20.0, sr: int = 16000, chunk_sec: float = 60.0) -> dict:
    """Concatenate ``sources`` (wav path, [(start, end, speaker)]) + silence, cyclically, until
    ``hours``; written chunk by chunk (memory: one chunk).  Returns the reference turns.

    The writer is a ``soundfile.SoundFile`` in append mode: ``harp_lib.core.audio.write`` takes a
    whole array, which is exactly what a 4-hour file must avoid.
    """
    import soundfile as sf  # heavy: soundfile (libsndfile), only when audio is read
    target = int(hours * 3600 * sr)
    out_wav = Path(out_wav)
    out_wav.parent.mkdir(parents=True, exist_ok=True)
    tmp = part_path(out_wav)
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


def _long_child(cfg: Config, args: BenchOptions) -> dict:
    """In a fresh process: extract the one long recording, report timings and own peak RSS."""
    # always the streaming path, also for shortened runs below scale.stream_above_sec
    cfg = cfg.with_overrides({"scale": {"stream_above_sec": 0.0}})
    t0 = time.perf_counter()
    rep = extract_domain(cfg, "emotion", force=True, workers=1, bench_dir=Path(args.bench_dir),
                         out_dir=Path(args.out_dir), progress=False)
    return {"wall_sec": round(time.perf_counter() - t0, 3), "stage_sec": rep["stage_sec"],
            "rtf": rep["rtf"], "max_rss_mb": round(_self_rss_mb(), 1)}


def bench_long(cfg: Config, args: BenchOptions) -> dict:
    """Synthesize an ``hours``-long podcast and extract it in a child process with streaming."""
    hours = float(args.hours or cfg.bench.long_hours)
    scratch = _scratch(cfg, args) / "long"
    sources = _long_sources(cfg)
    bench_dir = scratch / f"bench_{hours:g}h"
    info, gen_sec, gen_rss = _synth_long_bench(cfg, sources, hours, bench_dir)
    out_dir = scratch / f"extract_{hours:g}h"
    child, wall, peak_mb = _extract_in_child(cfg, bench_dir, out_dir)
    whole_file_mb = info["duration"] * 16000 * 4 / 2 ** 20
    d_all, cons, collar = _score_long(cfg, info, out_dir)
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
        md += _shortened_run_md(hours, peak_mb, wall)
        res["extrapolated_4h_rss_mb"] = round(peak_mb + (4 - hours) * 3600 * 4 * 256 * 4 * 2 / 2 ** 20, 1)
        res["extrapolated_4h_wall_h"] = round(wall * 4 / hours / 3600, 2)
    return res | {"_md": md}


def _long_sources(cfg: Config) -> list[tuple[Path, list]]:
    """The emotion benchmark's recordings (by id), each with its ground-truth (start, end, speaker) turns."""
    bench_src = cfg.path("paths.benchmark") / "emotion"
    recs = sorted(read_jsonl(bench_src / "recordings.jsonl", Recording), key=lambda r: r.id)
    gt = read_jsonl(bench_src / "segments.jsonl", Segment)
    sources = []
    for r in recs:
        turns = [(s.start, s.end, s.speaker) for s in gt if s.recording_id == r.id and s.speaker and s.text.strip()]
        sources.append((bench_src / r.audio_path, turns))
    return sources


def _synth_long_bench(cfg: Config, sources: list, hours: float, bench_dir: Path) -> tuple[dict, float, float]:
    """Write the long podcast and its ``recordings.jsonl`` under ``bench_dir``: (info, seconds, generator RSS MB)."""
    wav = bench_dir / "recordings" / "long_podcast.wav"
    t0 = time.perf_counter()
    info = synth_long_wav(sources, hours, wav, silence_sec=float(cfg.bench.long_silence_sec))
    gen_sec = time.perf_counter() - t0
    gen_rss = _self_rss_mb()
    write_jsonl(bench_dir / "recordings.jsonl",
                [Recording(id="long_podcast", domain="emotion", audio_path="recordings/long_podcast.wav",
                           duration=info["duration"], sample_rate=16000)])
    return info, gen_sec, gen_rss


def _extract_in_child(cfg: Config, bench_dir: Path, out_dir: Path) -> tuple[dict, float, float]:
    """Extract ``bench_dir`` into a fresh ``out_dir`` in a child process: (its report, wall seconds, peak RSS MB)."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    child_args = ["_long_child", "--bench-dir", str(bench_dir), "--out-dir", str(out_dir),
                  "--profile", cfg.profile, "--params", str(cfg.root / "params.yaml")]
    t1 = time.perf_counter()
    child, _ = _run_child(child_args)
    wall = time.perf_counter() - t1
    children_max = _child_rss_mb()
    return child, wall, max(child["max_rss_mb"], children_max)


def _score_long(cfg: Config, info: dict, out_dir: Path) -> tuple[dict, dict, float]:
    """Global DER of the extracted turns against the reference, and speaker-label consistency: (der, consistency, collar)."""
    # speaker consistency: the same voices recur in every copy, so one global DER over the
    # concatenation penalises any label that changes meaning between chunks
    raw = json.loads((out_dir / "stage1" / "long_podcast" / "turns.json").read_text())["raw"]
    hyp = [(t["start"], t["end"], t["speaker"]) for t in raw]
    collar = float(cfg.extract.metrics.der_collar)
    d_all = der(info["reference"], hyp, collar)
    # per piece: majority hypothesis label of each reference speaker
    cons = _label_consistency(info["reference"], hyp, info["pieces"])
    return d_all, cons, collar


def _shortened_run_md(hours: float, peak_mb: float, wall: float) -> list[str]:
    """The Markdown note of a run shorter than 4 h: the 4 h peak RSS and wall time, extrapolated."""
    return [f"**Shortened run** ({hours:g} h instead of 4 h, to fit the session).  Memory does not grow "
            f"with length beyond per-window d-vectors (4 KB/s: {4 * 3600 * 4 * 256 * 4 / 2 ** 20:.0f} MB for 4 h) and "
            f"per-turn records, so the 4 h peak is extrapolated as ≈ {peak_mb + (4 - hours) * 3600 * 4 * 256 * 4 * 2 / 2 ** 20:.0f} MB "
            f"(×2 margin on the d-vectors; an extrapolation, not a measurement).  4 h wall time extrapolates linearly to "
            f"≈ {wall * 4 / hours / 3600:.1f} h.  Full run: `harp bench long --hours 4`.", ""]


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
