"""Read-only data folders: one line naming the path, exit 1 (a fault), never a traceback (issue #28).

The data root lies on a tmpfs the test mounts and then remounts read-only (a real ``EROFS``:
root ignores permission bits, so ``chmod`` would prove nothing); skipped where ``mount`` is not
allowed.  Before: ``infer``, ``index``, ``extract --force``, ``ask`` and ``ingest`` ended in a
traceback (``OSError: [Errno 30] Read-only file system``) or exit 2.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from harp_lib.app import cli
from harp_lib.ownaudio import ask
from harp_lib.ownaudio.collection import collection
from harp_lib.ownaudio.ingest import ingest

from rel_helpers import cheap_cfg, flite
from test_storage_faults import sha_tree


@pytest.fixture(scope="module")
def ro_root(ci_reference, tmp_path_factory):
    """(root, cfg, recording id, a second source file): the ci reference + one ingested recording,
    on a tmpfs remounted read-only."""
    mnt = Path(tempfile.mkdtemp(prefix="harp-erofs-"))
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        mnt.rmdir()
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()[:200]})")
    try:
        root = mnt / "root"
        for s in ("benchmark", "extract", "index", "predictions"):
            shutil.copytree(ci_reference / s, root / s)
        src = tmp_path_factory.mktemp("ro") / "talk.wav"
        flite("I have had a dry cough and a sore throat since Monday.", src, "slt")
        cfg = cheap_cfg(root)
        (rec,) = ingest([src], "clinical", cfg=cfg, progress=False)
        other = src.with_name("other.wav")
        flite("Please take a deep breath.", other, "rms")
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        yield root, cfg, rec.id, other
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
        mnt.rmdir()


CASES = {
    "infer": ["infer", "--domain", "clinical", "--setup", "A2"],
    "index": ["index", "--domain", "clinical"],
    "extract_force": ["extract", "--domain", "clinical", "--force", "--recording", "consult_001"],
    "ingest": ["ingest", "{other}", "--domain", "clinical"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_read_only_data_folder_is_one_line_and_exit_1(ro_root, case, capsys, monkeypatch):
    root, cfg, rid, other = ro_root
    before = sha_tree(root)
    monkeypatch.setattr(cli, "load_config", lambda *a, **k: cfg)
    argv = [a.format(rid=rid, other=other) for a in CASES[case]] + ["--quiet"]
    rc = cli.main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("WARNING")]
    assert "Traceback" not in err, err
    assert rc == 1, (rc, err)
    assert any("Read-only file system" in ln and str(root) in ln for ln in lines), err
    assert len([ln for ln in lines if ln.startswith("harp ")]) == 1, err
    assert sha_tree(root) == before


def test_ask_on_a_read_only_collection_answers_and_warns_once(ro_root, capsys, caplog, monkeypatch):
    """The answer cache only saves time: the answer is printed (exit 0) and one warning names the
    path the cache could not be written to (before: a traceback, no answer)."""
    root, cfg, rid, _ = ro_root
    before = sha_tree(root)
    monkeypatch.setattr(cli, "load_config", lambda *a, **k: cfg)
    with caplog.at_level("WARNING", logger="harp_lib.ownaudio.ask"):
        rc = cli.main(["ask", rid, "How many speakers are there?", "--no-cache", "--quiet"])
    out = capsys.readouterr()
    assert rc == 0 and "speaker" in out.out and "Traceback" not in out.err, out
    warns = [r.getMessage() for r in caplog.records if r.name == "harp_lib.ownaudio.ask"]
    assert len(warns) == 1 and warns[0].startswith(f"answer not cached: {root}") and "Read-only file system" in warns[0]
    assert sha_tree(root) == before


def test_an_answers_path_that_is_a_file_costs_a_warning_not_the_answer(tmp_path, caplog):
    from rel_helpers import cheap_cfg as _cfg
    src = tmp_path / "talk.wav"
    flite("I have had a dry cough and a sore throat since Monday.", src, "slt")
    cfg = _cfg(tmp_path / "root")
    (rec,) = ingest([src], "clinical", cfg=cfg, progress=False)
    answers = collection(cfg).answers_dir
    answers.parent.mkdir(parents=True, exist_ok=True)
    answers.write_text("my notes")
    with caplog.at_level("WARNING", logger="harp_lib.ownaudio.ask"):
        ans = ask.ask(rec.id, "How many speakers are there?", cfg=cfg)
    assert ans.error is None and ans.answer and not ans.cached
    assert [r.getMessage() for r in caplog.records] == [f"answer not cached: {answers}: is a file, not a folder"]
    assert answers.read_text() == "my notes"
