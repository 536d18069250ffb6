"""Interrupted runs: extraction, inference and judging are SIGKILLed midway (a child process
kills itself while writing, see killer.py), then re-run; the resumed output has no duplicate
rows or index vectors and equals the uninterrupted reference run (``ci_reference``):
byte-identical files, or identical records apart from timing fields.
"""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

from harp_lib.agent.runner import run_setup
from harp_lib.evaluate.judge import run_judge
from harp_lib.extract.pipeline import extract_domain
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.retrieval.index_stage import build_index
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Judgement, Prediction, Segment

from rel_helpers import PY, ROOT, cheap_cfg, tree_bytes

KILLER = Path(__file__).with_name("killer.py")
#: stage-1 files that hold wall-clock seconds (everything else must match byte for byte)
TIMING_FILES = {"timing.json", "done.json", "stage2.json"}


def kill_midway(stage: str, root: Path, n: int) -> None:
    r = subprocess.run([PY, str(KILLER), stage, str(root), str(n)], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == -signal.SIGKILL, f"{stage} was not killed:\n{r.stdout}\n{r.stderr[-3000:]}"


def _copy(ref: Path, dst: Path, *subs: str) -> Path:
    for s in subs:
        shutil.copytree(ref / s, dst / s)
    return dst


def _no_timing(files: dict) -> dict:
    return {k: v for k, v in files.items() if Path(k).name not in TIMING_FILES}


def test_extraction_killed_midway_resumes_to_identical_outputs(ci_reference, tmp_path):
    root = _copy(ci_reference, tmp_path / "root", "benchmark")
    kill_midway("extract", root, 2)
    ext = root / "extract" / "clinical"
    assert (ext / "segments" / "consult_001.jsonl").exists()                       # item 1 done
    assert not (ext / "segments" / "consult_002.jsonl").exists()
    assert (ext / "stage1" / "consult_002" / "speech.json").exists()                 # item 2 half done
    assert (ext / "stage1" / "consult_002" / "turns.json.part").exists()
    assert not (ext / "stage1" / "consult_002" / "turns.json").exists()
    speech_mtime = (ext / "stage1" / "consult_002" / "speech.json").stat().st_mtime_ns

    cfg = cheap_cfg(root)
    rep = extract_domain(cfg, "clinical", progress=False)
    assert rep["n_recordings"] == 3 and rep["n_quarantined"] == 0
    assert (ext / "stage1" / "consult_002" / "speech.json").stat().st_mtime_ns == speech_mtime   # not redone
    assert not list(ext.rglob("*.part")) and not list(ext.rglob("*.tmp"))
    assert _no_timing(tree_bytes(root, "extract", skip=())) == _no_timing(tree_bytes(ci_reference, "extract", skip=()))

    # the index built from the resumed output: one vector per segment, same bytes as the reference
    build_index("clinical", cfg, progress=False)
    ix = SegmentIndex.load(root / "index" / "clinical")
    n_segs = sum(len(read_jsonl(p, Segment)) for p in (ext / "segments").glob("*.jsonl"))
    meta = json.loads((root / "index" / "clinical" / "audio.json").read_text())
    row_ids = np.load(root / "index" / "clinical" / "rows_ids.npy").tolist()     # index format 2
    assert len(ix) == n_segs == meta["n"] == len(row_ids) == len(set(row_ids))
    assert tree_bytes(root, "index") == tree_bytes(ci_reference, "index")
    # and building again (a re-run of the index stage) never appends vectors twice
    build_index("clinical", cfg, progress=False)
    assert tree_bytes(root, "index") == tree_bytes(ci_reference, "index")


def _records(path: Path, cls) -> list[dict]:
    out = []
    for r in read_jsonl(path, cls):
        d = r.to_dict()
        d.pop("timings", None)
        out.append(d)
    return out


def test_inference_killed_mid_write_resumes_without_duplicates(ci_reference, tmp_path):
    root = _copy(ci_reference, tmp_path / "root", "benchmark", "extract", "index")
    kill_midway("infer", root, 4)
    out = root / "predictions" / "clinical" / "A4.jsonl"
    raw = out.read_bytes()
    assert raw.count(b"\n") == 3 and not raw.endswith(b"\n")                      # 3 rows + a torn 4th
    preds = run_setup(cheap_cfg(root), "clinical", "A4", progress=False)
    rows = read_jsonl(out, Prediction)
    assert len(rows) == len(preds) == 6 and len({p.query_id for p in rows}) == 6
    assert all(p.error is None for p in rows)
    ref = ci_reference / "predictions" / "clinical" / "A4.jsonl"
    assert _records(out, Prediction) == _records(ref, Prediction)


@pytest.mark.slow
def test_judging_killed_mid_write_resumes_to_identical_file(ci_reference, tmp_path):
    root = _copy(ci_reference, tmp_path / "root", "benchmark", "predictions")
    kill_midway("judge", root, 3)
    out = root / "judgements" / "clinical" / "A4.rule.jsonl"
    assert out.read_bytes().count(b"\n") == 2
    run_judge("clinical", "A4", "rule", cheap_cfg(root))
    assert out.read_bytes() == (ci_reference / "judgements" / "clinical" / "A4.rule.jsonl").read_bytes()
    assert len({j.query_id for j in read_jsonl(out, Judgement)}) == 6


def test_rerunning_finished_stages_changes_nothing(ci_reference, tmp_path):
    """Resume on complete outputs is a no-op: same bytes, no duplicate rows or vectors."""
    root = _copy(ci_reference, tmp_path / "root", "benchmark", "extract", "index", "predictions", "judgements")
    cfg = cheap_cfg(root)
    before = {s: tree_bytes(root, s) for s in ("extract", "index", "predictions", "judgements")}
    extract_domain(cfg, "clinical", progress=False)
    build_index("clinical", cfg, progress=False)
    run_setup(cfg, "clinical", "A4", progress=False)
    run_judge("clinical", "A4", "rule", cfg)
    for s in ("extract", "index", "predictions", "judgements"):
        assert tree_bytes(root, s) == before[s], s
    v = np.load(root / "extract" / "clinical" / "vectors" / "consult_001.audio.npy", allow_pickle=False)
    assert v.shape[0] == len(read_jsonl(root / "extract" / "clinical" / "segments" / "consult_001.jsonl", Segment))


def test_temporary_files_of_a_killed_writer_are_removed_on_resume(ci_reference, tmp_path):
    """Both temporary-name styles (the old ``<name>.part`` and ``atomic.part_path``'s
    ``<name>.<pid>-<hex>.part``) left by a killed writer go when the recording is extracted again;
    a ``.part`` file that is not one of the recording's outputs stays."""
    root = _copy(ci_reference, tmp_path / "root", "benchmark", "extract")
    ext = root / "extract" / "clinical"
    left = [ext / "stage1" / "consult_002" / "turns.json.4242-0badc0de.part", ext / "stage1" / "consult_002" / "asr.json.part",
            ext / "segments" / "consult_001.jsonl.77-12345678.part", ext / "vectors" / "consult_003.audio.npy.9-abcdef01.part"]
    keep = ext / "segments" / "notes.part"
    for p in left + [keep]:
        p.write_text("half")
    rep = extract_domain(cheap_cfg(root), "clinical", progress=False)
    assert rep["n_recordings"] == 3 and rep["n_quarantined"] == 0
    assert [p for p in left if p.exists()] == [] and keep.read_text() == "half"
