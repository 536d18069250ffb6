"""Print the bytes the CPU-sensitive extraction steps produce for one short clip, as JSON.

Run natively and under ``qemu-x86_64 -cpu <model>`` by tests/extract/test_cross_cpu.py: the
outputs must be identical on every CPU model (docs/testing.md "Cross-machine bytes").

    .venv/bin/python scripts/cpu_probe.py CLIP.wav [--engine exact|ctranslate2] [--start S --end E]

Steps: the stage-1 VAD (silero, float64), the ASR of the clip exactly as the extract stage calls
it (params.yaml's whisper_ct2 options, its VAD spans as ``speech``), with ``--engine`` choosing
the Whisper engine (ctranslate2: the int8 engine, whose words depend on the CPU).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("clip", type=Path)
    ap.add_argument("--engine", default="exact", choices=["exact", "ctranslate2"])
    ap.add_argument("--start", type=float, default=0.0)
    ap.add_argument("--end", type=float, default=None)
    a = ap.parse_args(argv)
    t0 = time.monotonic()

    def phase(name):              # phase times on stderr: where an emulated run spends its minutes
        sys.stderr.write(f"[cpu_probe] {name}: {time.monotonic() - t0:.1f} s\n")
        sys.stderr.flush()
    import numpy as np
    from harp_lib.core import audio
    from harp_lib.config import create_backend, load_config
    wave = audio.load(a.clip, sr=16000)
    wave = np.asarray(wave[int(a.start * 16000): None if a.end is None else int(a.end * 16000)], np.float32)
    opts = dict(load_config().extract.options["whisper_ct2"])
    opts["engine"] = a.engine
    phase("imports, clip and config")
    speech = create_backend("vad", "silero").speech(wave, 16000)
    phase("vad")
    asr = create_backend("asr", "whisper_ct2", **opts).transcribe(wave, 16000, speech=speech)
    phase("asr")
    out = {"vad": [[round(s.start, 3), round(s.end, 3)] for s in speech], "asr": asr}
    sys.stdout.write(json.dumps(out, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
