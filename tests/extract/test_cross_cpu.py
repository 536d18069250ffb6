"""Same bytes on every CPU, proven on one machine: the extraction's CPU-sensitive steps run under
other CPU models with qemu-user (user-mode emulation of the same Python and wheels) and must
produce exactly what the host produces.

A test that compares settings on one host cannot see what another CPU computes (issue 38: an
Intel Sapphire Rapids host decoded other words).  Under ``qemu-x86_64 -cpu <model>`` every
library's CPU dispatch (MKL, oneDNN, OpenBLAS, numpy, CTranslate2) sees that model's CPUID and
takes its code path for it: ``Nehalem`` (SSE4.2, no AVX), ``Haswell`` (Intel AVX2/FMA) and
``EPYC`` (an AMD vendor string; the test runs the first two: the developers' host is an AMD
EPYC with AVX2 already).  qemu 7.2 cannot emulate AVX-512, so the AVX-512/VNNI/AMX path
itself is not run here; the exact engine does not depend on which path runs (its arithmetic is
float64 with every decision on a grid, harp_lib/extract/whisper_exact.py), and Nehalem vs AVX2
is the wider gap of the two.  The CTranslate2 int8 engine is run the same way to show that the
check can fail: under Nehalem it decodes other words or times than the host.

Slow (each emulated run takes minutes): the clip is 6 s of the real call.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIP = ROOT / ".cache" / "harp" / "pyannote_sample" / "sample.wav"
PROBE = ROOT / "scripts" / "cpu_probe.py"
QEMU = shutil.which("qemu-x86_64")
MODELS = ("Nehalem", "Haswell")       # no AVX at all; Intel's vendor string (the host here: AMD, AVX2)
# Seconds one emulated probe may take.  Measured on an idle 2-core AMD EPYC host (scripts/cpu_probe.py,
# 6 s of the call): Nehalem 312 s, Haswell 1047 s (qemu emulates AVX2/FMA ~3.4x slower than SSE).
# The CI run of stop 45 (an AVX-512 host, both xdist workers busy) killed Haswell at 1500 s.
TIMEOUT = {"Nehalem": 1500, "Haswell": 3600}
EMBED_PROBE = ROOT / "tests" / "golden" / "embed_probe.py"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(QEMU is None, reason="qemu-user missing: run scripts/bootstrap.sh"),
              pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86-64 CPU models only")]


def _env() -> dict:
    """No SIMD pins (scripts/deterministic_env.sh): each library dispatches on the CPU it sees."""
    drop = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR", "OPENBLAS_CORETYPE",
            "NPY_DISABLE_CPU_FEATURES", "CT2_FORCE_CPU_ISA", "CT2_USE_MKL")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    return env


def _probe(cpu: str | None, engine: str = "exact") -> dict:
    cmd = [sys.executable, str(PROBE), str(CLIP), "--start", "6", "--end", "12", "--engine", engine]
    if cpu:
        cmd = [QEMU, "-cpu", cpu] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=TIMEOUT.get(cpu, 1500))
    assert r.returncode == 0, (cpu, engine, r.returncode, r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def clip():
    assert CLIP.exists(), "pyannote sample call missing: run scripts/bootstrap.sh"
    return CLIP


@pytest.fixture(scope="module")
def host(clip):
    out = _probe(None)
    assert out["vad"] and len(out["asr"]["words"]) >= 8, out      # real speech was heard
    return out


@pytest.mark.parametrize("cpu", MODELS)
def test_vad_and_whisper_give_the_hosts_bytes_under_other_cpu_models(host, cpu):
    out = _probe(cpu)
    assert out == host, f"-cpu {cpu}:\n{json.dumps(out)}\nhost:\n{json.dumps(host)}"


def test_stored_vectors_are_the_hosts_bytes_without_avx():
    """Every stored embedder (MiniLM, resemblyzer, audio_stats, music_stats, eGeMAPS, the
    float64 l2norm + grid) under an SSE4.2-only CPU model: the bytes write_npy stores equal the
    host's (tests/golden/embed_probe.py; ~6 min emulated)."""
    def run(cpu):
        cmd = [sys.executable, str(EMBED_PROBE), "1"]
        r = subprocess.run(([QEMU, "-cpu", cpu] if cpu else []) + cmd, capture_output=True, text=True,
                           env={**_env(), "PYTHONPATH": str(ROOT)}, timeout=1500)
        assert r.returncode == 0, (cpu, r.stderr[-2000:])
        return json.loads(r.stdout.split("RESULT ", 1)[1].splitlines()[0])
    host, other = run(None), run("Nehalem")
    assert other.pop("aten") == "DEFAULT" and host.pop("aten") != "DEFAULT"     # another kernel family ran
    # numpy's AVX-512 (x86-64-v4) dispatch is the host's own: on for an AVX-512 host, off for an
    # AVX2 one; under Nehalem it is always off.  Only the stored bytes must agree.
    assert other.pop("numpy_x86_v4") is False and isinstance(host.pop("numpy_x86_v4"), bool)
    assert other == host


def test_the_check_can_fail_ctranslate2_int8_decodes_otherwise_without_avx(clip):
    """The int8 engine (the default before issue 38) under an SSE4.2-only CPU model: CTranslate2
    takes another kernel path and the words or word times differ from the host's."""
    host = _probe(None, "ctranslate2")
    other = _probe("Nehalem", "ctranslate2")
    assert other["vad"] == host["vad"]                               # the VAD is exact either way
    assert other["asr"] != host["asr"], "CTranslate2 int8 gave the host's bytes under -cpu Nehalem"
