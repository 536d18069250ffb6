"""Two runs on the same data folder at once: the second waits for the first (one message naming
the holder's pid and command) instead of interleaving with it; the result equals one
uninterrupted run (sha256), and no prediction row is written twice.  Also: worker processes die
with their parent when it is SIGKILLed."""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harp_lib.core.locks import LockBusy, stage_lock
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Prediction

from rel_helpers import PY, ROOT

RUNNER = Path(__file__).with_name("stage_runner.py")
TIMING_FILES = {"timing.json", "done.json", "stage2.json"}


def sha_tree(base: Path) -> dict[str, str]:
    return {p.relative_to(base).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(base.rglob("*")) if p.is_file() and p.name not in TIMING_FILES}


def _start(root: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([PY, str(RUNNER), str(root), "--", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_started(p: subprocess.Popen) -> None:
    line = p.stdout.readline()
    assert line.startswith("started"), line + p.stderr.read()


def test_two_concurrent_extract_force_runs_serialise(ci_reference, tmp_path):
    root = tmp_path / "root"
    for s in ("benchmark", "extract"):
        shutil.copytree(ci_reference / s, root / s)
    cmd = ("extract", "--domain", "clinical", "--force", "--quiet")
    a = _start(root, *cmd)
    _wait_started(a)
    time.sleep(1.0)                                   # a holds the lock now
    b = _start(root, *cmd)
    out_a, err_a = a.communicate(timeout=600)
    out_b, err_b = b.communicate(timeout=600)
    assert a.returncode == 0 and b.returncode == 0, err_a + err_b
    assert f"in use by another harp extract (pid {a.pid}" in err_b and "waiting" in err_b
    assert sha_tree(root / "extract" / "clinical") == sha_tree(ci_reference / "extract" / "clinical")


def test_two_concurrent_infer_runs_write_each_row_once(ci_reference, tmp_path):
    root = tmp_path / "root"
    for s in ("benchmark", "extract", "index"):
        shutil.copytree(ci_reference / s, root / s)
    cmd = ("infer", "--domain", "clinical", "--setup", "A4")
    a, b = _start(root, *cmd), _start(root, *cmd)    # started together
    a.communicate(timeout=600)
    b.communicate(timeout=600)
    assert a.returncode == 0 and b.returncode == 0
    rows = read_jsonl(root / "predictions" / "clinical" / "A4.jsonl", Prediction)
    ref = read_jsonl(ci_reference / "predictions" / "clinical" / "A4.jsonl", Prediction)
    assert sorted(p.query_id for p in rows) == sorted(p.query_id for p in ref)       # 6 rows, none twice
    strip = lambda ps: sorted((p.replace(timings={}).to_dict() for p in ps), key=lambda d: d["query_id"])  # noqa: E731
    assert strip(rows) == strip(ref)
    assert not list((root / "predictions" / "clinical").glob(".*"))    # the lock lives outside the DVC out


def test_a_busy_lock_names_its_holder(tmp_path):
    folder = tmp_path / "extract" / "clinical"
    holder = subprocess.Popen([PY, "-c", textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from harp_lib.core.locks import stage_lock
        with stage_lock({str(folder)!r}, "extract"):
            print("locked", flush=True)
            time.sleep(30)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LockBusy, match=rf"in use by another harp extract \(pid {holder.pid}: .*-c"):
            with stage_lock(folder, "extract", wait=False):
                pass
        t = time.monotonic()
        with pytest.raises(LockBusy, match="still held after 0 s"):
            with stage_lock(folder, "extract", timeout=0.3):
                pass
        assert time.monotonic() - t < 2
    finally:
        holder.kill()
        holder.wait()
    with stage_lock(folder, "extract", wait=False):    # a killed holder leaves no stale lock
        pass


def _children(pid: int) -> set[int]:
    out = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out |= {int(x) for x in (task / "children").read_text().split()}
        except OSError:
            pass
    return out


def _alive(pid: int) -> bool:
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return st.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_workers_die_when_the_parent_is_killed(tmp_path):
    """A pool with the extraction's worker initializer (locks.pool_worker_init), workers busy for 60 s: after SIGKILL of the
    parent every worker is gone within seconds (without the initializer they would run on)."""
    parent = subprocess.Popen([PY, "-c", textwrap.dedent(f"""
        import sys, time, multiprocessing as mp
        sys.path.insert(0, {str(ROOT)!r})
        from concurrent.futures import ProcessPoolExecutor
        from harp_lib.core.locks import pool_worker_init
        if __name__ == "__main__":
            ex = ProcessPoolExecutor(2, mp_context=mp.get_context("spawn"), initializer=pool_worker_init)
            futs = [ex.submit(time.sleep, 60) for _ in range(2)]
            time.sleep(0.5)
            print("submitted", flush=True)
            time.sleep(120)
        """)], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert parent.stdout.readline().strip() == "submitted"
        t = time.monotonic()
        workers: set[int] = set()
        while time.monotonic() - t < 60:
            workers = {c for c in _children(parent.pid)
                       if b"resource_tracker" not in Path(f"/proc/{c}/cmdline").read_bytes()}
            if len(workers) >= 2:
                break
            time.sleep(0.2)
        assert len(workers) >= 2
        time.sleep(8)                               # the initializer (torch import) has run
        assert all(_alive(w) for w in workers)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        t = time.monotonic()
        while any(_alive(w) for w in workers) and time.monotonic() - t < 5:
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)], "workers survived their parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)
