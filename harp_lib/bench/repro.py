"""``harp bench repro``: ``dvc repro`` of the mini profile in a separate worktree, then a no-op repro."""
from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

from harp_lib.config import Config
from harp_lib.bench.common import _goals, _verdict
from harp_lib.bench.options import BenchOptions


def bench_repro(cfg: Config, args: BenchOptions) -> dict:
    """``dvc repro`` of the mini profile in a fresh git worktree (never the main checkout's data/)."""
    root = Path(cfg.root)
    wt = Path(args.worktree or "/tmp/harp_repro")
    if wt.exists():
        # only a worktree of this repository (one an earlier bench made) is removed; never any other path
        listed = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=root, capture_output=True,
                                text=True).stdout
        if f"worktree {wt.resolve()}" not in listed.splitlines():
            raise FileExistsError(f"--worktree {wt} exists and is not a git worktree of {root}: "
                                  f"give a new path (the bench never deletes a folder it did not create)")
        subprocess.run(["git", "worktree", "remove", "--force", str(wt)], cwd=root, capture_output=True)
    subprocess.run(["git", "worktree", "add", "--detach", str(wt), "HEAD"], cwd=root, check=True, capture_output=True)
    venv = root / ".venv"
    if not (wt / ".venv").exists():
        os.symlink(venv, wt / ".venv")
    (wt / ".cache").mkdir(exist_ok=True)
    # rendered-TTS cache only (keyed by sha256 of the inputs): the benchmark is still built from raw audio
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
