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
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cough_scores(recs, truth: dict, events: list) -> dict:
    """Cough F1 of the ``Cough`` events by the extraction metric's own rule
    (:func:`harp_lib.extract.quality._cough_metrics`, per recording), fed the events' spans as
    one pseudo-segment's ``event_times`` per recording."""
    from types import SimpleNamespace
    from harp_lib.extract.quality import _cough_metrics
    ext = {r.id: [SimpleNamespace(labels={"event_times": [(e.start, e.end) for rid, e in events
                                                          if rid == r.id and e.label == "Cough"]})] for r in recs}
    m = _cough_metrics(recs, truth, ext)
    return {"cough_f1": m["cough_f1"], **{k: m["cough_counts"][k] for k in ("tp", "fp", "fn")}}


def _run(engine: str, recs, waves: dict, truth: dict) -> tuple[dict, dict]:
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
    f1 = _cough_scores(recs, truth, events)
    return ({"cpu_s": round(cpu, 1), "cpu_s_per_audio_min": round(cpu / minutes, 3), **f1,
             "events": len(events)}, {"outputs": outputs, "events": events})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=ROOT / "data" / "benchmark" / "clinical")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "sound_events")
    a = ap.parse_args(argv)
    from harp_lib.core import audio
    from harp_lib.core.atomic import write_text
    from harp_lib.bench.common import machine_info
    from harp_lib.core.jsonl import read_jsonl
    from harp_lib.core.schema import Recording, Segment
    recs = read_jsonl(a.bench / "recordings.jsonl", Recording)
    waves = {r.id: audio.load(a.bench / r.audio_path, sr=16000).astype(np.float64) for r in recs}
    truth = {}
    for s in read_jsonl(a.bench / "segments.jsonl", Segment):
        if "cough_count" in s.labels:
            truth.setdefault(s.recording_id, []).append(s)
    rows, raw = {}, {}
    for engine in ("exact", "onnxruntime"):
        rows[engine], raw[engine] = _run(engine, recs, waves, truth)
        print(engine, rows[engine], flush=True)
    ex = np.concatenate([raw["exact"]["outputs"][r] for r in waves]).astype(int)
    ort = np.concatenate([raw["onnxruntime"]["outputs"][r] for r in waves]).astype(int)
    agree = {"patches": int(len(ex)), "uint8_equal": round(float((ex == ort).mean()), 4),
             "median_steps": float(np.median(np.abs(ex - ort))), "max_steps": int(np.abs(ex - ort).max()),
             "top_class_equal": round(float((ex.argmax(1) == ort.argmax(1)).mean()), 4),
             "same_events": [(r, e.label, e.start, e.end) for r, e in raw["exact"]["events"]]
             == [(r, e.label, e.start, e.end) for r, e in raw["onnxruntime"]["events"]]}
    manifest = a.bench.parent / "manifest.json"       # written by harp synth / the benchmark stage
    built = json.loads(manifest.read_text()) if manifest.exists() else {}
    report = {"bench": (f"the {a.bench.name} benchmark (profile {built['profile']}, seed {built['seed']})"
                        if {"profile", "seed"} <= set(built) else str(a.bench)),
              "audio_min": round(sum(len(w) for w in waves.values()) / 16000 / 60, 2),
              "machine": machine_info(), "engines": rows, "agreement": agree}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    write_text(a.out.with_suffix(".json"), json.dumps(report, indent=2) + "\n")
    lines = ["# Sound events: exact engine vs onnxruntime", "",
             f"`scripts/bench_sound_events.py` on {report['bench']} "
             f"({report['audio_min']} min of audio), one thread, on {report['machine']['cpu_model']} "
             f"(load {report['machine']['loadavg'][0]}).", "",
             "| engine | CPU s | CPU s / audio min | cough F1 | tp | fp | fn | events |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {k} | {v['cpu_s']} | {v['cpu_s_per_audio_min']} | {v['cough_f1']} | {v['tp']} | {v['fp']} | {v['fn']} | "
              f"{v['events']} |" for k, v in rows.items()]
    lines += ["", f"Agreement over {agree['patches']} patches x 521 classes: {agree['uint8_equal']:.1%} of uint8 "
              f"outputs equal (median {agree['median_steps']:g}, max {agree['max_steps']} grid steps apart), top "
              f"class equal on {agree['top_class_equal']:.1%} of patches, same events: {agree['same_events']}.", ""]
    write_text(a.out.with_suffix(".md"), "\n".join(lines))
    print(a.out.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
