"""Embed a fixed small input with every stored embedder and print the sha256 of the bytes
``write_npy`` would store (tests/golden/test_determinism.py runs it under each CPU capability).

    python tests/golden/embed_probe.py THREADS [DUMP_DIR]

DUMP_DIR (optional): also save each array there as <name>.npy (for measuring flips)."""
from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import torch


def inputs():
    rng = np.random.default_rng(0)
    t = np.arange(16000 * 3) / 16000
    waves = [(0.3 * np.sin(2 * np.pi * f * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
              + 0.05 * rng.standard_normal(t.size)).astype(np.float32) for f in (150, 440, 900)]
    texts = ["I have had a dry cough since Monday.", "Let me listen to your chest.",
             "The chorus is loud and upbeat.", "She sounded angry when she said that."]
    return waves, texts, rng.standard_normal((64, 384)).astype(np.float32)


def main(threads: int, dump: str | None = None) -> dict:
    torch.set_num_threads(threads)
    from harp_lib.extract.embedders import (AudioStatsEmbedder, EgemapsEmbedder, MiniLMEmbedder,
                                            MusicStatsEmbedder, ResemblyzerEmbedder, l2norm)
    waves, texts, raw = inputs()
    from numpy._core._multiarray_umath import __cpu_features__ as feats
    out = {"aten": torch.backends.cpu.get_cpu_capability(), "numpy_x86_v4": bool(feats.get("X86_V4", False))}
    arrays = {"minilm": lambda: MiniLMEmbedder().embed(texts),
              "resemblyzer": lambda: ResemblyzerEmbedder().embed(waves),
              "audio_stats": lambda: AudioStatsEmbedder().embed(waves),
              "music_stats": lambda: MusicStatsEmbedder().embed(waves),
              "egemaps": lambda: EgemapsEmbedder().embed(waves),
              "l2norm": lambda: l2norm(raw)}
    for name, fn in arrays.items():
        a = np.asarray(fn(), np.float32)
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)                       # what write_npy stores
        out[name] = hashlib.sha256(buf.getvalue()).hexdigest()[:16]
        if dump:
            Path(dump).mkdir(parents=True, exist_ok=True)
            np.save(Path(dump) / f"{name}.npy", a)
    return out


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)))
