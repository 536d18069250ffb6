"""Byte-stable vectors across machines (docs/testing.md "Cross-machine bytes").

The stored vectors (data/extract/<domain>/vectors/*.npy, DVC outs) used to differ between a CPU
with AVX-512 and one without: numpy and torch pick SIMD kernels at run time and the float32 sums
round differently.  Every DVC stage now runs under scripts/deterministic_env.sh (sourced by
scripts/run_notebook.sh): AVX2 code path, one BLAS/OpenMP thread; and ``l2norm`` accumulates in
float64.  These tests fail if the stored bytes depend on the thread count or summation order, or if
the stage environment lets the AVX-512 kernels run.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

EMBED = r"""
import hashlib, io, json, os, sys
import numpy as np, torch
torch.set_num_threads(int(sys.argv[1]))
from harp_lib.extract.embedders import AudioStatsEmbedder, MiniLMEmbedder, l2norm
rng = np.random.default_rng(0)
t = np.arange(16000 * 3) / 16000
waves = [(0.3 * np.sin(2 * np.pi * f * t) + 0.05 * rng.standard_normal(t.size)).astype(np.float32) for f in (150, 440, 900)]
texts = ["I have had a dry cough since Monday.", "Let me listen to your chest.", "The chorus is loud and upbeat."]
out = {"aten": torch.backends.cpu.get_cpu_capability()}
from numpy._core._multiarray_umath import __cpu_features__ as feats
out["numpy_x86_v4"] = bool(feats.get("X86_V4", False))
for name, arr in (("minilm", MiniLMEmbedder().embed(texts)), ("audio_stats", AudioStatsEmbedder().embed(waves)),
                  ("l2norm", l2norm(rng.standard_normal((64, 384)).astype(np.float32)))):
    buf = io.BytesIO(); np.save(buf, np.asarray(arr, np.float32), allow_pickle=False)   # what write_npy stores
    out[name] = hashlib.sha256(buf.getvalue()).hexdigest()
print("RESULT " + json.dumps(out))
"""


def _embed(threads: int) -> dict:
    cmd = f'source scripts/deterministic_env.sh && exec .venv/bin/python -c "$EMBED" {threads}'
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "PYTHONPATH": str(ROOT), "EMBED": EMBED,
           "HF_HUB_OFFLINE": "1"}
    r = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(next(ln for ln in r.stdout.splitlines() if ln.startswith("RESULT "))[7:])


def test_l2norm_bytes_do_not_depend_on_the_summation_order():
    from harp_lib.extract.embedders import l2norm
    x = np.random.default_rng(1).normal(size=(300, 384)).astype(np.float32)
    a = l2norm(x)
    b = l2norm(x[:, ::-1])[:, ::-1]                 # the same rows, summed in the opposite order
    assert a.dtype == np.float32 and a.tobytes() == np.ascontiguousarray(b).tobytes()
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)


@pytest.mark.slow
def test_stage_environment_gives_the_same_vector_bytes_with_any_thread_count():
    one, two = _embed(1), _embed(2)
    assert one == two
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if " avx2" in cpuinfo:
        # the AVX-512 kernels (a source of machine-dependent float32 sums) are off in every stage
        assert one["aten"] == "AVX2" and one["numpy_x86_v4"] is False
