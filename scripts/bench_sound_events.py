"""Sound events (YAMNet) on a benchmark domain: the exact engine against onnxruntime.

For each engine: CPU seconds for the whole recordings (one thread), per minute of audio, and the
cough F1 against the ground truth (per ground-truth segment with a ``cough_count``: an event whose
middle falls inside it; the ``cough_f1`` rule of harp_lib/extract/quality.py); then how far the
two engines' uint8 outputs and events agree.  Writes ``results/bench/sound_events.{json,md}``.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_sound_events.py [--bench data/benchmark/clinical]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def _cough_f1(events, truth) -> dict:
    middles = [(e.start + e.end) / 2 for e in events if e.label == "Cough"]
    tp = fp = fn = 0
    for s in truth:
        pred, true = any(s.start <= t < s.end for t in middles), int(s.labels["cough_count"]) > 0
        tp, fp, fn = tp + (pred and true), fp + (pred and not true), fn + (true and not pred)
    return {"cough_f1": round(2 * tp / (2 * tp + fp + fn), 4) if tp + fp + fn else None, "tp": tp, "fp": fp, "fn": fn}


def _run(engine: str, waves: dict, truth: dict) -> tuple[dict, dict]:
    from harp_lib.extract.sound_events import SR, Yamnet, YamnetLabeler, events_from_scores
    labeler, model = YamnetLabeler(), Yamnet(engine=engine)
    t0, outputs, events = time.process_time(), {}, []
    for rid, wave in waves.items():
        outputs[rid] = model.quantized(wave)
        found = events_from_scores(model.grid_scores(outputs[rid]), model.names, labeler.labels,
                                   labeler.threshold, duration=len(wave) / SR, merge_gap_sec=labeler.merge_gap_sec)
        events += [(rid, e) for e in found]
    cpu = time.process_time() - t0
    minutes = sum(len(w) for w in waves.values()) / SR / 60
    f1 = _cough_f1([e for _, e in events], [s for segs in truth.values() for s in segs])
    return ({"cpu_s": round(cpu, 1), "cpu_s_per_audio_min": round(cpu / minutes, 3), **f1,
             "events": len(events)}, {"outputs": outputs, "events": events})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=ROOT / "data" / "benchmark" / "clinical")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "sound_events")
    a = ap.parse_args(argv)
    from harp_lib import audio
    from harp_lib.schema import Recording, Segment, read_jsonl
    recs = read_jsonl(a.bench / "recordings.jsonl", Recording)
    waves = {r.id: audio.load(a.bench / r.audio_path, sr=16000).astype(np.float64) for r in recs}
    truth = {}
    for s in read_jsonl(a.bench / "segments.jsonl", Segment):
        if "cough_count" in s.labels:
            truth.setdefault(s.recording_id, []).append(s)
    rows, raw = {}, {}
    for engine in ("exact", "onnxruntime"):
        rows[engine], raw[engine] = _run(engine, waves, truth)
        print(engine, rows[engine], flush=True)
    ex = np.concatenate([raw["exact"]["outputs"][r] for r in waves]).astype(int)
    ort = np.concatenate([raw["onnxruntime"]["outputs"][r] for r in waves]).astype(int)
    agree = {"patches": int(len(ex)), "uint8_equal": round(float((ex == ort).mean()), 4),
             "median_steps": float(np.median(np.abs(ex - ort))), "max_steps": int(np.abs(ex - ort).max()),
             "top_class_equal": round(float((ex.argmax(1) == ort.argmax(1)).mean()), 4),
             "same_events": [(r, e.label, e.start, e.end) for r, e in raw["exact"]["events"]]
             == [(r, e.label, e.start, e.end) for r, e in raw["onnxruntime"]["events"]]}
    bench = a.bench.resolve()                    # data/benchmark/<domain> of whichever clone ran the benchmark stage
    report = {"bench": "/".join(bench.parts[-3:]) if bench.parts[-3:-1] == ("data", "benchmark") else str(bench),
              "audio_min": round(sum(len(w) for w in waves.values()) / 16000 / 60, 2),
              "cpu": _cpu_name(), "engines": rows, "agreement": agree}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    lines = ["# Sound events: exact engine vs onnxruntime", "",
             f"`scripts/bench_sound_events.py` on {report['bench']} "
             f"({report['audio_min']} min of audio), one thread, on {report['cpu']}.", "",
             "| engine | CPU s | CPU s / audio min | cough F1 | tp | fp | fn | events |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {k} | {v['cpu_s']} | {v['cpu_s_per_audio_min']} | {v['cough_f1']} | {v['tp']} | {v['fp']} | {v['fn']} | "
              f"{v['events']} |" for k, v in rows.items()]
    lines += ["", f"Agreement over {agree['patches']} patches x 521 classes: {agree['uint8_equal']:.1%} of uint8 "
              f"outputs equal (median {agree['median_steps']:g}, max {agree['max_steps']} grid steps apart), top "
              f"class equal on {agree['top_class_equal']:.1%} of patches, same events: {agree['same_events']}.", ""]
    a.out.with_suffix(".md").write_text("\n".join(lines))
    print(a.out.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
