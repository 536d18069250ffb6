"""A prediction file carries its setup and domain, and every reader and writer checks them
(issue #28, class 3).

Before: ``harp infer --setup A1 --no-resume --out <A4's file>`` replaced A4's predictions with A1
rows (rc 0), and judge / score then reported A1 as A4; without ``--no-resume`` the A1 run found
its query ids "done" in A4's file and returned A4's rows as A1's.
"""
from __future__ import annotations

import dataclasses
import shutil

import pytest

from harp_lib.app import cli
from harp_lib.evaluate.judge import run_judge
from harp_lib.evaluate.scoring import run_score
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import Prediction

from rel_helpers import cheap_cfg


@pytest.fixture()
def run_root(ci_reference, tmp_path):
    root = tmp_path / "root"
    for s in ("benchmark", "index", "predictions", "judgements"):
        shutil.copytree(ci_reference / s, root / s)
    return root


@pytest.mark.parametrize("resume", [True, False], ids=["resume", "no_resume"])
def test_infer_out_onto_another_setups_file_is_refused(run_root, monkeypatch, capsys, resume):
    cfg = cheap_cfg(run_root)
    monkeypatch.setattr(cli, "load_config", lambda *a, **k: cfg)
    a4 = run_root / "predictions" / "clinical" / "A4.jsonl"
    before = a4.read_bytes()
    argv = ["infer", "--domain", "clinical", "--setup", "A1", "--out", str(a4)] + ([] if resume else ["--no-resume"])
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"{a4}: line 1: field 'setup': a row of setup 'A4', expected 'A1'" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert a4.read_bytes() == before


def test_infer_out_onto_another_domains_file_is_refused(run_root, tmp_path, monkeypatch, capsys):
    cfg = cheap_cfg(run_root)
    monkeypatch.setattr(cli, "load_config", lambda *a, **k: cfg)
    other = tmp_path / "emotion_A1.jsonl"          # an A1 file of another domain
    rows = read_jsonl(run_root / "predictions" / "clinical" / "A1.jsonl", Prediction)
    write_jsonl(other, [dataclasses.replace(p, domain="emotion") for p in rows])
    before = other.read_bytes()
    assert cli.main(["infer", "--domain", "clinical", "--setup", "A1", "--out", str(other)]) == 2
    assert "field 'domain': a row of domain 'emotion', expected 'clinical'" in capsys.readouterr().err
    assert other.read_bytes() == before


def test_judge_and_score_refuse_another_setups_rows(run_root):
    """A file that already holds another setup's rows (what the old --out left) is never read as its own."""
    cfg = cheap_cfg(run_root)
    pdir = run_root / "predictions" / "clinical"
    shutil.copy(pdir / "A1.jsonl", pdir / "A4.jsonl")
    with pytest.raises(SchemaError, match=r"A4.jsonl: line 1: field 'setup': a row of setup 'A1', expected 'A4'"):
        run_judge("clinical", "A4", "rule", cfg)
    with pytest.raises(SchemaError, match=r"A4.jsonl: line 1: field 'setup': a row of setup 'A1', expected 'A4'"):
        run_score("clinical", "A4", "rule", cfg)
    jdir = run_root / "judgements" / "clinical"
    shutil.copy(jdir / "A4.rule.jsonl", jdir / "A1.rule.jsonl")       # A4's verdicts filed as A1's
    with pytest.raises(SchemaError, match=r"A1.rule.jsonl: line 1: field 'setup': a row of setup 'A4', expected 'A1'"):
        run_score("clinical", "A1", "rule", cfg)



def test_infer_says_when_the_index_is_older_than_the_extraction(ci_reference, run_root, monkeypatch, capsys):
    """Issue #28 (smaller cases): infer used an index older than the latest extraction without a word."""
    import os
    shutil.copytree(ci_reference / "extract", run_root / "extract")
    cfg = cheap_cfg(run_root)
    monkeypatch.setattr(cli, "load_config", lambda *a, **k: cfg)
    idx = run_root / "index" / "clinical" / "segments.jsonl"
    seg = run_root / "extract" / "clinical" / "segments" / "consult_002.jsonl"
    t = idx.stat().st_mtime_ns
    os.utime(seg, ns=(t - 10**9, t - 10**9))                  # extraction older than the index: quiet
    assert cli.main(["infer", "--domain", "clinical", "--setup", "A1", "--quiet"]) == 0
    assert "older than the extraction" not in capsys.readouterr().err
    os.utime(seg, ns=(t + 10**9, t + 10**9))                  # re-extracted after the index was built
    assert cli.main(["infer", "--domain", "clinical", "--setup", "A1", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"harp infer: warning: the index {run_root / 'index' / 'clinical'} is older than the extraction " \
           f"({seg} changed after it)" in err and "run `harp index --domain clinical` first" in err, err
