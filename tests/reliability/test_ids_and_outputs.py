"""Ids are not paths, and no run writes or deletes what it did not create.

* one id rule for recordings, queries and segments' recordings (``harp_lib.core.paths.check_id``),
  checked when a manifest is read (file, line, field), ids unique within a manifest;
* an id made to escape (``../../../../victim``) stops the stage before anything is written:
  a folder outside the project keeps its bytes, even under ``--force``;
* ``DataPaths`` / ``ExtractPaths`` refuse unsafe names and any path leaving its root (symlinks too);
* ``harp infer --out`` / ``--no-resume`` write only into a missing file or a prediction file:
  a device, a FIFO, a symlink, a folder or someone's notes are refused, untouched; ``--out`` with
  several setups is an error;
* a WAV header claiming 1 Hz is a content error (quarantined at once, no hang).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import time
from pathlib import Path

import pytest

from harp_lib.app import cli
from harp_lib.agent.runner import run_setup
from harp_lib.evaluate.judge import judge_predictions, make_judge
from harp_lib.evaluate.store import load_benchmark
from harp_lib.extract.pipeline import extract_domain
from harp_lib.core.paths import DataPaths, ExtractPaths, IdError, check_id, under
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import Judgement, Prediction, Query, Recording

from rel_helpers import cheap_cfg

UNSAFE = ["../../victim", "a/b", "..", "a..b", ".hidden", "-x", "a b", "a\\b", "C:x", "x" * 129, "é", "a\nb"]


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def sha_tree(base: Path) -> dict[str, str]:
    return {q.relative_to(base).as_posix(): sha(q) for q in sorted(base.rglob("*")) if q.is_file()}


@pytest.mark.parametrize("bad", UNSAFE)
def test_unsafe_ids_are_refused_naming_file_line_and_field(tmp_path, bad):
    good = Recording("consult_001", "clinical", "recordings/consult_001.wav", 10.0)
    p = tmp_path / "recordings.jsonl"
    p.write_text(json.dumps(good.to_dict()) + "\n" + json.dumps(dict(good.to_dict(), id=bad)) + "\n")
    with pytest.raises(SchemaError, match=r"recordings\.jsonl: line 2: field 'id': .*is not a safe id") as e:
        read_jsonl(p, Recording)
    assert e.value.line == 2 and e.value.field == "id"
    q = {"query_id": "q1", "domain": "clinical", "recording_id": "consult_001", "query_type": "reported",
         "text": "?", "ground_truth": {}}
    qp = tmp_path / "queries.jsonl"
    for fld in ("query_id", "recording_id"):
        qp.write_text(json.dumps(dict(q, **{fld: bad})) + "\n")
        with pytest.raises(SchemaError, match=rf"queries\.jsonl: line 1: field '{fld}': .*not a safe id"):
            read_jsonl(qp, Query)
    assert check_id("consult_001.v2-b") == "consult_001.v2-b"


def test_duplicate_ids_in_a_manifest_are_refused(tmp_path):
    r = Recording("consult_001", "clinical", "recordings/a.wav", 10.0)
    p = tmp_path / "recordings.jsonl"
    write_jsonl(p, [r, r.replace(audio_path="recordings/b.wav")])
    with pytest.raises(SchemaError, match=r"line 2: field 'id': duplicate id 'consult_001' \(first on line 1\)"):
        read_jsonl(p, Recording)


def _victim(tmp_path: Path) -> Path:
    v = tmp_path / "victim"
    (v / "x").mkdir(parents=True)
    (v / "x" / "thesis.tex").write_text("years of work\n")
    (v / "queries.jsonl").write_text("not ours\n")
    return v


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_an_escaping_recording_id_stops_extraction_before_any_write(ci_reference, tmp_path, monkeypatch,
                                                                   capsys, force):
    root = tmp_path / "root"
    shutil.copytree(ci_reference / "benchmark", root / "benchmark")
    shutil.copytree(ci_reference / "extract", root / "extract")
    victim = _victim(tmp_path)
    before, ext_before = sha_tree(victim), sha_tree(root / "extract")
    bench_before = sha_tree(root / "benchmark")
    man = root / "benchmark" / "clinical" / "recordings.jsonl"
    recs = read_jsonl(man, Recording)
    lines = [json.dumps(r.to_dict()) for r in recs]
    # stage1/<id> with this id would be <tmp>/victim/x: the old code wrote there and, with
    # --force, deleted every file in it
    lines[1] = json.dumps(dict(recs[1].to_dict(), id="../../../../victim/x"))
    man.write_text("\n".join(lines) + "\n")
    bench_before = sha_tree(root / "benchmark")
    cfg = cheap_cfg(root)
    monkeypatch.setattr(cli, "load_config", lambda *a, **k: cfg)
    assert cli.main(["extract", "--domain", "clinical", "--quiet"] + (["--force"] if force else [])) == 2
    err = capsys.readouterr().err
    assert "recordings.jsonl: line 2: field 'id'" in err and "not a safe id" in err
    assert sha_tree(victim) == before
    assert sha_tree(root / "extract") == ext_before and sha_tree(root / "benchmark") == bench_before


def test_paths_object_refuses_unsafe_names_and_escapes(tmp_path):
    cfg = cheap_cfg(tmp_path)
    dp = DataPaths(cfg)
    assert dp.predictions("clinical", "A4") == tmp_path / "predictions" / "clinical" / "A4.jsonl"
    assert dp.judgements("clinical", "A4", "rule").name == "A4.rule.jsonl"
    for call in (lambda: dp.predictions("clinical", "../A4"), lambda: dp.benchmark("../etc"),
                 lambda: dp.judgements("clinical", "A4", "r/ule"), lambda: dp.scores("..", "A4", "rule"),
                 lambda: ExtractPaths(tmp_path).segments("a/b"), lambda: ExtractPaths(tmp_path).vectors("a", "../x"),
                 lambda: ExtractPaths(tmp_path).stage1("..")):
        with pytest.raises(IdError):
            call()
    # a symlink inside the data folder that points out of it is refused too
    (tmp_path / "extract").mkdir()
    (tmp_path / "extract" / "clinical").symlink_to(_victim(tmp_path))
    with pytest.raises(IdError, match="leaves its data folder"):
        under(tmp_path / "extract", "clinical", "segments")
    with pytest.raises(IdError, match="leaves its data folder"):
        dp.extract("clinical")


@pytest.fixture()
def infer_root(ci_reference, tmp_path):
    root = tmp_path / "root"
    for s in ("benchmark", "index"):
        shutil.copytree(ci_reference / s, root / s)
    return root


def _targets(tmp_path: Path) -> dict[str, Path]:
    t = tmp_path / "targets"
    t.mkdir()
    (t / "notes.txt").write_text("my notes, no trailing newline")
    (t / "other.jsonl").write_text('{"name": "someone else\'s data"}\n')
    os.mkfifo(t / "fifo")
    (t / "link.jsonl").symlink_to(t / "notes.txt")
    (t / "folder").mkdir()
    return {"device": Path("/dev/null"), "text": t / "notes.txt", "jsonl": t / "other.jsonl",
            "fifo": t / "fifo", "symlink": t / "link.jsonl", "folder": t / "folder"}


@pytest.mark.parametrize("resume", [True, False], ids=["resume", "no_resume"])
def test_infer_out_never_writes_into_what_it_did_not_write(infer_root, tmp_path, monkeypatch, capsys, resume):
    cfg = cheap_cfg(infer_root)
    monkeypatch.setattr(cli, "load_config", lambda *a, **k: cfg)
    for kind, target in _targets(tmp_path).items():
        st = os.lstat(target)
        content = target.read_bytes() if kind in ("text", "jsonl") else None
        argv = ["--domain", "clinical", "--setup", "A1", "--out", str(target)] + ([] if resume else ["--no-resume"])
        assert cli.main(["infer", *argv]) == 2, kind
        cap = capsys.readouterr()
        out = cap.out + cap.err
        assert "refusing to write into it" in out and str(target) in out, (kind, out)
        assert os.lstat(target).st_mode == st.st_mode and os.lstat(target).st_ino == st.st_ino
        if content is not None:
            assert target.read_bytes() == content
    assert not list((tmp_path / "targets").glob(".*.lock"))      # refused before any lock file


def test_infer_out_with_several_setups_is_an_error(infer_root, tmp_path, monkeypatch, capsys):
    cfg = cheap_cfg(infer_root)
    monkeypatch.setattr(cli, "load_config", lambda *a, **k: cfg)
    out = tmp_path / "p.jsonl"
    assert cli.main(["infer", "--domain", "clinical", "--setup", "A1", "--setup", "A4", "--out", str(out)]) == 2
    assert "--out names one file" in capsys.readouterr().err and not out.exists()


def test_no_resume_restarts_its_own_prediction_file(ci_reference, infer_root, tmp_path):
    out = tmp_path / "mine.jsonl"
    cfg = cheap_cfg(infer_root)
    run_setup(cfg, "clinical", "A4", out_path=out, progress=False)
    first = read_jsonl(out, Prediction)
    run_setup(cfg, "clinical", "A4", out_path=out, resume=False, progress=False)
    again = read_jsonl(out, Prediction)
    assert [p.query_id for p in again] == [p.query_id for p in first] and len(again) == 6
    strip = lambda ps: [p.replace(timings={}) for p in ps]  # noqa: E731
    assert strip(again) == strip(first) == strip(read_jsonl(ci_reference / "predictions" / "clinical" / "A4.jsonl",
                                                            Prediction))


def test_judge_no_resume_refuses_a_foreign_file(ci_reference, tmp_path):
    cfg = cheap_cfg(ci_reference)
    preds = read_jsonl(ci_reference / "predictions" / "clinical" / "A4.jsonl", Prediction)
    bench = load_benchmark("clinical", cfg)
    foreign = tmp_path / "notes.jsonl"
    foreign.write_text("dear diary\n")
    with pytest.raises(SchemaError, match="refusing to write into it"):
        judge_predictions(preds, bench, make_judge("rule", cfg), out_path=foreign, resume=False)
    assert foreign.read_text() == "dear diary\n"
    own = tmp_path / "own.jsonl"
    judge_predictions(preds, bench, make_judge("rule", cfg), out_path=own)
    judge_predictions(preds, bench, make_judge("rule", cfg), out_path=own, resume=False)
    assert own.read_bytes() == (ci_reference / "judgements" / "clinical" / "A4.rule.jsonl").read_bytes()
    assert len(read_jsonl(own, Judgement)) == 6


def _wav_header_only_rate(path: Path, sr: int, n_frames: int) -> None:
    data = b"\x00\x01" * n_frames
    hdr = (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt " +
           struct.pack("<IHHIIHH", 16, 1, 1, sr, sr * 2, 2, 16) + b"data" + struct.pack("<I", len(data)))
    path.write_bytes(hdr + data)


def test_a_1_hz_wav_header_is_quarantined_at_once(ci_reference, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(ci_reference / "benchmark", root / "benchmark")
    d = root / "benchmark" / "clinical"
    _wav_header_only_rate(d / "recordings" / "one_hz.wav", 1, 20000)
    recs = read_jsonl(d / "recordings.jsonl", Recording)
    # the manifest agrees with the header (20000 frames at 1 Hz = 20000 s), so only the rate is absurd
    write_jsonl(d / "recordings.jsonl", recs + [Recording("one_hz", "clinical", "recordings/one_hz.wav", 20000.0)])
    t = time.monotonic()
    rep = extract_domain(cheap_cfg(root), "clinical", progress=False)
    assert time.monotonic() - t < 120
    assert [q["recording_id"] for q in rep["quarantine"]] == ["one_hz"]
    assert "implausible sample rate 1 Hz" in rep["quarantine"][0]["error"]
    assert rep["n_recordings"] == 3


def test_bench_repro_never_deletes_a_folder_that_is_not_its_worktree(tmp_path):
    """``harp bench repro --worktree PATH`` used to ``rmtree`` whatever PATH was."""
    from harp_lib.bench.options import BenchOptions
    from harp_lib.bench.repro import bench_repro
    from harp_lib.config import load_config
    victim = tmp_path / "mine"
    victim.mkdir()
    (victim / "thesis.tex").write_text("years of work\n")
    with pytest.raises(FileExistsError, match="not a git worktree"):
        bench_repro(load_config(), BenchOptions(worktree=str(victim)))
    assert (victim / "thesis.tex").read_text() == "years of work\n"
