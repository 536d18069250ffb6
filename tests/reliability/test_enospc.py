"""A real full disk during ``harp extract --force`` (issue #28, class 2).

The data root lies on a small tmpfs that the test mounts (root and ``mount`` needed; otherwise the
test is skipped and ``test_storage_faults.py`` covers the same rule with ``RLIMIT_FSIZE`` and an
injected errno).  The file system is filled up to a few kB above what the copied outputs use, so
the re-extraction runs out of space part-way.  Before: one recording's segments and vectors were
deleted (it was quarantined) and the command exited 0.  Rule: old outputs stay until the new ones
are completely written; the storage error stops the run with rc != 0 and names the path.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from rel_helpers import PY, ROOT

from test_storage_faults import sha_tree

RUNNER = Path(__file__).with_name("stage_runner.py")


@pytest.fixture
def small_fs():
    """A fresh tmpfs (64 MiB until :func:`_shrink`), unmounted afterwards."""
    mnt = Path(tempfile.mkdtemp(prefix="harp-enospc-"))
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        mnt.rmdir()
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()[:200]}): the RLIMIT_FSIZE test covers it")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
        mnt.rmdir()


def _shrink(mnt: Path, spare: int) -> None:
    """Resize the tmpfs to what it holds now plus ``spare`` bytes."""
    st = os.statvfs(mnt)
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    subprocess.run(["mount", "-o", f"remount,size={used + spare}", str(mnt)], check=True)


@pytest.mark.parametrize("spare", [0, 4 << 10])      # the largest output is 4.4 kB: 4 kB fail part-way
def test_a_full_disk_during_force_keeps_every_output_and_fails(ci_reference, small_fs, spare):
    root = small_fs / "root"
    for s in ("benchmark", "extract"):
        shutil.copytree(ci_reference / s, root / s)
    ext = root / "extract" / "clinical"
    before = sha_tree(ext)
    _shrink(small_fs, spare)
    r = subprocess.run([PY, str(RUNNER), str(root), "--", "extract", "--domain", "clinical", "--force", "--quiet"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr          # a fault (issue #28)
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("harp extract")]
    assert len(err) == 1 and "(ENOSPC)" in err[0] and str(ext) in err[0], r.stderr
    assert "Traceback" not in r.stderr
    assert sha_tree(ext) == before                        # nothing deleted, nothing half-written
    assert not list(ext.rglob("*.part"))
    assert not (ext / "quarantine").exists() or not list((ext / "quarantine").iterdir())
