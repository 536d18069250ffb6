"""Manifests and queries: bad lines are clear errors naming file, line and field; paths are
kept under the data root and offline; one query with a bad reference clip fails alone."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from harp_lib.app import cli
from harp_lib.agent.runner import run_setup
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import Prediction, Query, resolve_under

from rel_helpers import cheap_cfg

Q = {"query_id": "q1", "domain": "clinical", "recording_id": "r1", "query_type": "reported",
     "text": "Did the patient mention a cough?", "ground_truth": {"answer": "Yes"}}


def _write_lines(p: Path, lines) -> Path:
    p.write_bytes(b"".join((x if isinstance(x, bytes) else json.dumps(x).encode()) + b"\n" for x in lines))
    return p


@pytest.mark.parametrize("bad,match", [
    (b'{"query_id": "q2", "domain": "clinical",', r"line 2: not valid JSON \(Expecting"),
    ({k: v for k, v in Q.items() if k != "query_id"}, r"line 2: field 'query_id': missing required field"),
    ({**Q, "query_id": ""}, r"line 2: field 'query_id': query_id must be a non-empty string"),
    ({**Q, "query_type": "vibe"}, r"line 2: field 'query_type': unknown query type 'vibe'"),
    ({**Q, "query_type": "locate"}, r"line 2: field 'query_type': query type 'locate' belongs to domain 'emotion'"),
    ({**Q, "references": {"Z": "references/z.wav"}}, r"line 2: field 'references': unknown reference role 'Z'"),
    ({**Q, "colour": "red"}, r"line 2: field 'colour': unknown field for Query"),
    ({**Q, "time_ref": "soon"}, r"line 2: field 'time_ref': expected a number"),
    (json.dumps({**Q, "time_ref": float("nan")}).encode(), r"line 2: field 'time_ref': expected a finite number"),
    (b"[1, 2, 3]", r"line 2: expected a JSON object for Query"),
    ("a bare string".encode(), r"line 2: not valid JSON"),
    ('{"query_id": "caf\xe9"}'.encode("latin-1"), r"line 2: not UTF-8 text \(invalid continuation byte"),
    (b"\xff\xfe{\x00}\x00", r"line 2: not UTF-8 text"),
    (b"[" * 50_000, r"line 2: not valid JSON \(RecursionError"),
])
def test_bad_query_lines_name_file_line_and_field(tmp_path, bad, match):
    p = _write_lines(tmp_path / "queries.jsonl", [Q, bad, Q])
    with pytest.raises(SchemaError, match=match) as e:
        read_jsonl(p, Query)
    assert str(e.value).startswith(str(p)) and e.value.line == 2


def test_utf8_bom_and_blank_lines_are_fine(tmp_path):
    p = tmp_path / "queries.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps(Q).encode() + b"\n\n   \n" + json.dumps({**Q, "query_id": "q2"}).encode())
    assert [q.query_id for q in read_jsonl(p, Query)] == ["q1", "q2"]


def test_missing_and_directory_manifests(tmp_path):
    with pytest.raises(SchemaError, match=r"nope\.jsonl: no such file \(expected a JSONL file of Query"):
        read_jsonl(tmp_path / "nope.jsonl", Query)
    with pytest.raises(SchemaError, match="is a directory"):
        read_jsonl(tmp_path, Query)


@pytest.mark.parametrize("rel,match", [
    ("../outside.wav", "escapes the data root"),
    ("recordings/../../outside.wav", "escapes the data root"),
    ("/etc/passwd", "escapes the data root"),
    ("https://example.org/a.wav", "expected a local file path, got a URL"),
    ("s3://bucket/a.wav", "got a URL"),
    ("file:///etc/passwd", "got a URL"),
    ("", "expected a relative file path"),
])
def test_paths_outside_the_data_root_and_urls_are_rejected(tmp_path, rel, match):
    with pytest.raises(ValueError, match=match):
        resolve_under(tmp_path, rel)


def test_symlink_escaping_the_root_is_rejected(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "secret.wav").write_bytes(b"x")
    os.symlink(tmp_path / "secret.wav", tmp_path / "root" / "link.wav")
    with pytest.raises(ValueError, match="escapes the data root"):
        resolve_under(tmp_path / "root", "link.wav")
    assert resolve_under(tmp_path / "root", "sub/ok.wav") == (tmp_path / "root" / "sub" / "ok.wav").resolve()


def test_bad_manifest_stops_the_cli_with_a_clear_message(ci_reference, tmp_path, capsys, monkeypatch):
    """A malformed manifest is not a per-query failure (its ids are unknown): the stage stops,
    naming file and line, with a non-zero exit code and no traceback."""
    root = tmp_path / "root"
    shutil.copytree(ci_reference / "benchmark", root / "benchmark")
    shutil.copytree(ci_reference / "index", root / "index")
    qf = root / "benchmark" / "clinical" / "queries.jsonl"
    lines = qf.read_bytes().splitlines(keepends=True)
    qf.write_bytes(b"".join(lines[:2]) + b'{"query_id": 7}\n' + b"".join(lines[2:]))
    cfg = cheap_cfg(root)
    with pytest.raises(SchemaError, match=r"queries\.jsonl: line 3: field 'query_id': expected a string"):
        run_setup(cfg, "clinical", "A1", progress=False)
    monkeypatch.setattr(cli, "load_config", lambda *a, **k: cfg)
    assert cli.main(["infer", "--domain", "clinical", "--setup", "A1"]) == 2
    assert "queries.jsonl: line 3" in capsys.readouterr().err
    rf = root / "benchmark" / "clinical" / "recordings.jsonl"
    rf.write_bytes(rf.read_bytes() + b"\xff\xfe\n")
    monkeypatch.setattr(cli, "load_config", lambda *a, **k: cfg)
    assert cli.main(["extract", "--domain", "clinical", "--quiet"]) == 2
    assert "recordings.jsonl: line 4: not UTF-8 text" in capsys.readouterr().err


def test_bad_reference_clips_fail_their_query_only(ci_reference, tmp_path):
    root = tmp_path / "root"
    for s in ("benchmark", "index"):
        shutil.copytree(ci_reference / s, root / s)
    d = root / "benchmark" / "clinical"
    (d / "references").mkdir()
    shutil.copy(d / "recordings" / "consult_001.wav", d / "references" / "ok.wav")
    (root / "benchmark" / "outside.wav").write_bytes((d / "references" / "ok.wav").read_bytes())
    refs = [{"A": "references/missing.wav"}, {"A": "../outside.wav"}, {"A": "https://example.org/a.wav"},
            {"A": "references/ok.wav"}, {}, {"B": "references/ok.wav", "A": "references/gone.wav"}]
    qs = read_jsonl(d / "queries.jsonl", Query)
    write_jsonl(d / "queries.jsonl", [q.replace(references=r) for q, r in zip(qs, refs)])
    preds = run_setup(cheap_cfg(root), "clinical", "A3", progress=False)
    assert [p.query_id for p in preds] == [q.query_id for q in qs]              # none dropped
    assert len(read_jsonl(root / "predictions" / "clinical" / "A3.jsonl", Prediction)) == 6
    e = [p.error or "" for p in preds]
    assert "inputs failed" in e[0] and "reference clip(s) not found: A=" in e[0] and "missing.wav" in e[0]
    assert "escapes the data root" in e[1]
    assert "got a URL" in e[2]
    assert preds[3].error is None and preds[3].answer and preds[4].error is None
    assert "A=" in e[5] and "gone.wav" in e[5] and "B=" not in e[5]
    assert all(p.answer == "" and p.plan.sets == () for p in preds[:3])
