"""Paper backends: one loader, one clear message, and a load failure stops the run.

Runs in the main environment (where pyannote.audio, whisper, openbeats, laion_clap and funasr are
absent: the message must name the environment to create) and, when scripts/make_env.sh created
them, inside the separate environments through a subprocess (weights absent there: the message
must name the `harp fetch-weights` command, not raise a raw OSError).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harp_lib.config import BackendError, create_backend, get_backend, list_backends
from harp_lib.extract import paper_models as PM
from harp_lib.extract.backends import PAPER

ROOT = Path(__file__).resolve().parents[2]
_STAGE = {"labeler": "labelers"}      # registry stage -> params.yaml extract.backends key


def test_every_paper_backend_is_in_the_one_table():
    seen = set()
    for stage, names in PAPER.items():
        for n in names:
            cls = get_backend(stage, n)
            m = getattr(cls, "paper_model", None)
            assert m is not None, f"{stage}:{n} is not registered through paper_backend()"
            assert PM.BACKEND_KEYS[(_STAGE.get(stage, stage), n)] == m.name
            seen.add(m.name)
    assert seen == set(PM.PAPER_MODELS), set(PM.PAPER_MODELS) ^ seen
    # nothing in the registry loads a model the table does not list
    paper_classes = {k for k in list_backends() if getattr(get_backend(*k), "paper_model", None)}
    assert {(s, n) for s, ns in PAPER.items() for n in ns} == paper_classes
    # the gated segmentation model is never loaded, so never listed
    assert not any("segmentation-3.0" in w.ident for m in PM.PAPER_MODELS.values() for w in m.weights)


def test_any_constructor_failure_becomes_one_load_error():
    @PM.paper_backend("clap")
    class Boom:
        def __init__(self):
            raise OSError("We couldn't connect to 'https://huggingface.co'\nsecond line")
    with pytest.raises(PM.BackendLoadError) as ei:
        Boom()
    msg = str(ei.value)
    assert isinstance(ei.value, BackendError) and "\n" not in msg
    assert "OSError: We couldn't connect" in msg and "harp fetch-weights --backend clap" in msg
    assert "lukewys/laion_clap/630k-audioset-best.pt" in msg and "HARP_CLAP_CKPT" in msg


def _missing_here(name: str) -> bool:
    import importlib.util
    def ok(mod):
        try:
            return importlib.util.find_spec(mod) is not None
        except ImportError:
            return False
    return not all(ok(p) for p in PM.PAPER_MODELS[name].packages)


@pytest.mark.parametrize("key", sorted(PM.PAPER_MODELS))
def test_missing_package_or_weights_message(key, tmp_path, monkeypatch):
    """Weights absent (empty HF cache and whisper cache), offline by default as `harp extract` runs."""
    m = PM.PAPER_MODELS[key]
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("WHISPER_CACHE", str(tmp_path / "whisper"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HARP_CSER_CKPT", raising=False)
    monkeypatch.delenv("HARP_CLAP_CKPT", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv(PM.OFFLINE_MARK, raising=False)
    PM.offline_by_default()
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ[PM.OFFLINE_MARK] == "1"
    stage = next(s for s, ns in PAPER.items() if m.backend in ns and _STAGE.get(s, s) in m.stages)
    with pytest.raises(PM.BackendLoadError) as ei:
        create_backend(stage, m.backend)
    msg = str(ei.value)
    assert "\n" not in msg and "huggingface-cli" not in msg
    assert "HF_HUB_OFFLINE=1 is set in your environment" not in msg     # harp set it, not the user
    if _missing_here(key):
        assert (f"scripts/make_env.sh {m.env}" in msg) if not m.install else ("git clone" in msg), msg
    elif key == "cser":
        assert "HARP_CSER_CKPT" in msg and "harp fetch-weights --backend cser" in msg
    else:
        assert f"harp fetch-weights --backend {key}" in msg, msg
        assert "harp runs offline by default" in msg, msg


def test_user_set_offline_is_reported_as_such(tmp_path, monkeypatch):
    if _missing_here("mert"):
        pytest.skip("transformers/torch not importable here")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(PM.OFFLINE_MARK, raising=False)
    PM.offline_by_default()                           # the user's setting is left alone
    assert PM.OFFLINE_MARK not in os.environ
    with pytest.raises(PM.BackendLoadError) as ei:
        create_backend("domain_emb", "mert")
    assert "HF_HUB_OFFLINE=1 is set in your environment" in str(ei.value)


def test_load_failure_stops_the_run_instead_of_quarantining(speech_bench, tmp_path):
    from harp_lib.config import load_config
    from harp_lib.extract import pipeline as P
    cfg = load_config(profile="mini", overrides={"extract": {"workers": 1, "backends": {"vad": "pyannote"}}})
    out = tmp_path / "out"
    with pytest.raises(PM.BackendLoadError):
        P.extract_domain(cfg, "emotion", bench_dir=speech_bench / "emotion", out_dir=out, progress=False)
    assert not (out / "quarantine").exists() and not (out / "quarantine.jsonl").exists()


# ------------------------------------------------------------------ inside the separate envs
_IN_ENV = {"pyannote": [("diarization", "pyannote", "diarization_pyannote"), ("asr", "whisper", "whisper"),
                        ("audio_emb", "openbeats", "openbeats")],
           "clap": [("audio_emb", "clap", "clap")],
           "paper": [("domain_emb", "emotion2vec", "emotion2vec")]}


@pytest.mark.slow
@pytest.mark.parametrize("env", sorted(_IN_ENV))
def test_backend_in_its_own_env_without_weights(env, tmp_path):
    py = PM.env_python(env, ROOT)
    if not py.exists():
        pytest.skip(f"no {env} environment at {py.parent.parent}: create it with scripts/make_env.sh {env}")
    code = ("import sys\nfrom harp_lib.config import create_backend\nfrom harp_lib.extract.paper_models import "
            "BackendLoadError, offline_by_default\noffline_by_default()\n"
            "for stage, name in [a.split(':') for a in sys.argv[1:]]:\n"
            "    try:\n        create_backend(stage, name)\n        print('LOADED', name)\n"
            "    except BackendLoadError as e:\n        print('ERR', name, str(e).replace(chr(10), ' '))\n")
    env_vars = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", PM.OFFLINE_MARK, "HF_TOKEN",
                                                                 "HF_HUB_CACHE", "PYTHONPATH")}
    env_vars.update(HF_HOME=str(tmp_path / "hf"), WHISPER_CACHE=str(tmp_path / "whisper"), PYTHONPATH=str(ROOT),
                    PYANNOTE_METRICS_ENABLED="0", HF_TOKEN="hf_dummy_not_a_token")
    r = subprocess.run([str(py), "-c", code, *[f"{s}:{n}" for s, n, _ in _IN_ENV[env]]], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600, env=env_vars)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = {ln.split()[1]: ln for ln in r.stdout.splitlines() if ln.startswith(("ERR", "LOADED"))}
    for _, name, key in _IN_ENV[env]:
        line = lines[name]
        assert line.startswith("ERR"), line
        assert "is not importable" not in line, line                      # the package is there
        assert f"harp fetch-weights --backend {key}" in line and "offline by default" in line, line
