"""Storage faults are not bad recordings: a file-size limit (EFBIG), a full disk (ENOSPC), a
read-only file system (EROFS) or a permission error (EACCES) during extraction stops the run with
one message; nothing is quarantined and every earlier output keeps its bytes (sha256).  A partly
written ``.npy`` never survives.  The fault is reproduced for real with ``RLIMIT_FSIZE`` in a child
process (``stage_runner.py``), and by injecting the errno for the others."""
from __future__ import annotations

import errno
import hashlib
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from harp_lib.core import atomic
from harp_lib.core.atomic import StorageError, write_npy
from harp_lib.extract.pipeline import extract_domain

from rel_helpers import PY, ROOT, cheap_cfg

RUNNER = Path(__file__).with_name("stage_runner.py")
TIMING_FILES = {"timing.json", "done.json", "stage2.json"}


def sha_tree(base: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``base`` (wall-clock timing files aside)."""
    return {p.relative_to(base).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(base.rglob("*")) if p.is_file() and p.name not in TIMING_FILES}


def _root(ci_reference: Path, dst: Path) -> Path:
    for s in ("benchmark", "extract"):
        shutil.copytree(ci_reference / s, dst / s)
    return dst


def test_file_size_limit_during_force_stops_the_run_and_keeps_every_output(ci_reference, tmp_path):
    root = _root(ci_reference, tmp_path / "root")
    ext = root / "extract" / "clinical"
    before = sha_tree(ext)
    assert any(k.startswith("vectors/") for k in before) and any(k.startswith("stage1/") for k in before)
    # 600 bytes: speech.json fits, the turns / vectors / segments of the first recording do not
    r = subprocess.run([PY, str(RUNNER), str(root), "--fsize", "600", "--", "extract", "--domain", "clinical", "--force", "--quiet"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr          # a fault (issue #28: was 2)
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("harp extract")]
    assert len(err) == 1 and "File too large (EFBIG)" in err[0] and "raise it" in err[0], r.stderr
    assert "Traceback" not in r.stderr
    assert sha_tree(ext) == before                       # byte-identical, nothing deleted
    assert not (ext / "quarantine").exists() or not list((ext / "quarantine").iterdir())
    assert not list(ext.rglob("*.part"))                 # no partial file kept
    # without the limit the same command completes to the reference outputs
    r = subprocess.run([PY, str(RUNNER), str(root), "--", "extract", "--domain", "clinical", "--force", "--quiet"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert sha_tree(ext) == sha_tree(ci_reference / "extract" / "clinical")


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_injected_storage_errors_are_not_quarantined(ci_reference, tmp_path, monkeypatch, code):
    root = _root(ci_reference, tmp_path / "root")
    ext = root / "extract" / "clinical"
    before = sha_tree(ext)
    real = np.save

    def failing(fh, arr, *a, **k):         # half an array reaches the disk, then the fault
        real(fh, arr, *a, **k)
        fh.truncate(max(0, fh.tell() // 2))
        raise OSError(code, "injected " + errno.errorcode[code])
    monkeypatch.setattr(atomic.np, "save", failing)
    with pytest.raises(StorageError, match=errno.errorcode[code]):
        extract_domain(cheap_cfg(root), "clinical", force=True, progress=False)
    assert sha_tree(ext) == before
    assert not list(ext.rglob("*.part"))
    assert not (ext / "quarantine").exists() or not list((ext / "quarantine").iterdir())


def test_a_partly_written_npy_is_never_kept(tmp_path, monkeypatch):
    target = tmp_path / "v.npy"
    write_npy(target, np.ones((4, 3)))
    good = target.read_bytes()
    real = np.save

    def half(fh, arr, *a, **k):            # no error raised, but the file is short: the check catches it
        real(fh, arr, *a, **k)
        fh.truncate(fh.tell() - 20)
    monkeypatch.setattr(atomic.np, "save", half)
    with pytest.raises(StorageError, match="unreadable|expected"):
        write_npy(target, np.zeros((4, 3)))
    assert target.read_bytes() == good and sorted(p.name for p in tmp_path.iterdir()) == ["v.npy"]


def test_content_errors_are_still_quarantined(ci_reference, tmp_path):
    """The split is by errno: a recording's own bad content keeps being quarantined."""
    root = _root(ci_reference, tmp_path / "root")
    wav = root / "benchmark" / "clinical" / "recordings" / "consult_002.wav"
    wav.write_bytes(b"RIFF" + b"\x00" * 100)
    rep = extract_domain(cheap_cfg(root), "clinical", force=True, progress=False)
    assert [q["recording_id"] for q in rep["quarantine"]] == ["consult_002"]
    assert rep["n_recordings"] == 2
