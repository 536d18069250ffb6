"""Tracebacks that were user errors (issue #28, class 9): one line on stderr, exit 2."""
from __future__ import annotations

from harp_lib.app import cli


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



def test_fetch_weights_with_a_misspelt_backend_names_the_valid_ones(capsys):
    """Before: ``-S extract.backends.asr=<typo> --dry-run`` dropped the backend from the list, rc 0."""
    rc = cli.main(["fetch-weights", "--profile", "paper", "-S", "extract.backends.asr=whsper", "--dry-run"])
    cap = capsys.readouterr()
    assert rc == 2, cap
    from harp_lib.config import list_backends
    available = ", ".join(name for _, name in list_backends("asr"))      # every registered one: a new backend is listed
    assert "whisper_ct2" in available.split(", ")
    assert "extract.backends.asr (emotion): unknown asr backend 'whsper' (did you mean whisper?); available: " \
           f"{available}" in cap.err, cap.err
    assert "Traceback" not in cap.err and len(cap.err.strip().splitlines()) == 1 and "fetch " not in cap.out
    assert cli.main(["fetch-weights", "--profile", "paper", "--dry-run"]) == 0      # the real names still list
    assert "whisper:large-v3-turbo" in capsys.readouterr().out
