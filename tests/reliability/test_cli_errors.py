"""Tracebacks that were user errors (issue #28, class 9): one line on stderr, exit 2."""
from __future__ import annotations

from harp_lib import cli


def test_an_override_that_is_not_yaml_is_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("HARP_ROOT", str(cli.load_config().root))
    assert cli.main(["index", "--domain", "clinical", "--profile", "ci", "-S", "agent.top_k=[1,"]) == 2
    err = capsys.readouterr().err
    assert "override 'agent.top_k=[1,': the value is not valid YAML" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_synth_out_onto_a_file_is_one_line(capsys, tmp_path):
    target = tmp_path / "a_file"
    target.write_text("mine")
    assert cli.main(["synth", "--profile", "ci", "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert str(target) in err and "File exists" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and target.read_text() == "mine"

