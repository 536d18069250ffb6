"""``harp verify`` on a real git checkout: a clean tree, then a moved transcript, metric and
stage output, reported with the first stage in pipeline order and the first differing words."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from harp_lib.app import verify as V

ROOT = Path(__file__).resolve().parents[1]

LOCK = {"schema": "2.0", "stages": {
    "index@emotion": {"cmd": "x", "deps": [{"path": "data/extract/emotion/segments", "md5": "s1.dir"}],
                      "outs": [{"path": "data/index/emotion", "md5": "i1.dir"}]},
    "extract@emotion": {"cmd": "x", "deps": [{"path": "harp_lib/extract", "md5": "c1.dir"}],
                        "params": {"params.yaml": {"extract": {"workers": 2}}},
                        "outs": [{"path": "data/extract/emotion/segments", "md5": "s1.dir"},
                                 {"path": "results/metrics/extract_emotion.transcripts.tsv", "md5": "t1"}]},
    "benchmark": {"cmd": "x", "deps": [], "outs": [{"path": "data/benchmark", "md5": "b1.dir"}]}}}
TSV = "segment_id\tstart\tend\ttext\ne_001\t0.000\t2.500\tWhat a joy. So we'll come.\ne_002\t2.500\t4.000\tYes.\n"


def _git(d: Path, *args):
    subprocess.run(["git", *args], cwd=d, check=True, capture_output=True)


def _repo(tmp_path: Path) -> Path:
    d = tmp_path / "clone"
    (d / "results" / "metrics").mkdir(parents=True)
    (d / "dvc.lock").write_text(yaml.safe_dump(LOCK))
    (d / "results" / "metrics" / "extract_emotion.json").write_text(json.dumps({"wer": 0.0673, "stage_sec": {"asr": 1}}))
    (d / "results" / "metrics" / "extract_emotion.transcripts.tsv").write_text(TSV)
    (d / "results" / "table2.md").write_text("| A2 | 58.7 |\n")
    _git(d, "init", "-q")
    _git(d, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    _git(d, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "results")
    return d


def test_a_clean_tree_verifies_and_exits_0(tmp_path):
    d = _repo(tmp_path)
    rep = V.verify(d)
    assert rep["clean"] and "equals HEAD" in V.render(rep)


def test_moved_outputs_name_the_first_stage_the_metric_and_the_words(tmp_path):
    d = _repo(tmp_path)
    lock = json.loads(json.dumps(LOCK))
    st = lock["stages"]
    st["extract@emotion"]["outs"][0]["md5"] = "s2.dir"          # other transcripts, same code and params
    st["index@emotion"]["deps"][0]["md5"] = "s2.dir"
    st["index@emotion"]["outs"][0]["md5"] = "i2.dir"
    (d / "dvc.lock").write_text(yaml.safe_dump(lock))
    m = d / "results" / "metrics"
    (m / "extract_emotion.json").write_text(json.dumps({"wer": 0.0693, "stage_sec": {"asr": 9}}))
    (m / "extract_emotion.transcripts.tsv").write_text(TSV.replace("joy. So we'll", "joy! So, we'll"))
    (d / "results" / "table2.md").write_text("| A2 | 58.9 |\n")
    rep = V.verify(d)
    assert not rep["clean"]
    assert [s["stage"] for s in rep["stages"]] == ["extract@emotion", "index@emotion"]   # pipeline order
    assert rep["stages"][0]["deps"] == [] and rep["stages"][0]["params"] == []
    assert rep["metrics"]["results/metrics/extract_emotion.json"] == [("wer", 0.0673, 0.0693)]   # timings ignored
    t = rep["transcripts"]["results/metrics/extract_emotion.transcripts.tsv"]
    assert t["n_changed"] == 1 and t["first"][0]["segment"] == "e_001"
    assert "joy." in t["first"][0]["old"] and "joy!" in t["first"][0]["new"]
    assert rep["other"] == ["results/table2.md"]
    text = V.render(rep)
    assert "first stage whose outputs differ: extract@emotion" in text and "a machine difference" in text
    r = subprocess.run([sys.executable, "-m", "harp_lib.app.cli", "verify", "--params", str(ROOT / "params.yaml")], cwd=d, capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT), "HARP_ROOT": str(d), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 1, r.stderr[-1500:]
    assert "was: ...What a joy. So we'll come.." in r.stdout and "now: ...What a joy! So, we'll come." in r.stdout
